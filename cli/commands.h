/*
 * commands.h - the zbench subcommands, one file each (cli/cmd_<name>.c), called
 * from the dispatch table in main.c with argv[0] = the subcommand name. Each
 * returns the process exit code, one of common/error.h's zb_exit (0 success,
 * 1 a verdict: regression, missed target, failed check; 2 bad input; 3 no GPU or a
 * GPU error; 4 does not fit; 5 a bug; 130 interrupted): zb_report_error maps a
 * status through the one table, docs/ci.md lists it.
 */
#ifndef ZB_COMMANDS_H
#define ZB_COMMANDS_H

int cmd_list(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_validate_deepspeed(int argc, char **argv); /* validate --deepspeed (cmd_validate.c) */
int cmd_baseline(int argc, char **argv);
int cmd_regress(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_merge(int argc, char **argv);

/* Commands report a failed status with zb_report_error (common/error.h). */
#include "common/error.h"

#endif

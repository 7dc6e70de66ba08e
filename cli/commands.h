/*
 * commands.h - the zbench subcommands, one file each (cli/cmd_<name>.c), called
 * from the dispatch table in main.c with argv[0] = the subcommand name. Each
 * returns the process exit code: 0 success, 1 runtime failure (or a detected
 * regression), 2 bad input or a missing capability.
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

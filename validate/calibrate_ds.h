/*
 * calibrate_ds.h - `zbench calibrate --deepspeed`: fit the DeepSpeed framework
 * profile to measured DeepSpeed runs (calibrate_ds.c). cmd_calibrate hands over
 * when --deepspeed is among its arguments.
 */
#ifndef ZB_CALIBRATE_DS_H
#define ZB_CALIBRATE_DS_H

int zb_calibrate_deepspeed(int argc, char **argv);

#endif

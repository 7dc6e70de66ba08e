/* calibrate_db.h - zbench calibrate --from-db (the executor profile from a validate run). */
#ifndef ZB_CALIBRATE_DB_H
#define ZB_CALIBRATE_DB_H

int zb_calibrate_from_db(int argc, char **argv);

#endif

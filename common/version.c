/* version.c - the commit zbench was built from; see version.h. */
#include "common/version.h"

#ifndef ZB_GIT_COMMIT_STR
#define ZB_GIT_COMMIT_STR ""
#endif

const char zb_git_commit[] = ZB_GIT_COMMIT_STR;

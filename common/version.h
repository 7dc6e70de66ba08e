/*
 * version.h - the commit zbench was built from. It lives in one object
 * (common/version.c) that the Makefile rebuilds whenever HEAD moves (the stamp
 * build/git-commit), so a run stores the binary's commit: a -D on every object kept,
 * in each object not recompiled since, the commit it was last compiled at, and runs
 * recorded a commit older than the binary that made them.
 */
#ifndef ZB_VERSION_H
#define ZB_VERSION_H

extern const char zb_git_commit[]; /* short hash, "" outside a git checkout */
#define ZB_GIT_COMMIT zb_git_commit

#endif

/*
 * version.h - the commit zbench was built from. It lives in one object
 * (common/version.c) that the Makefile rebuilds whenever HEAD moves (the stamp
 * build/git-commit), so a run stores the binary's commit: a -D on every object kept,
 * in each object not recompiled since, the commit it was last compiled at (fid runs F,
 * G and H of 2026-12-01 recorded 13bc110, cac9eb4 and faf63af for builds of e68d1e2,
 * 8c77010 and c6a49b2).
 */
#ifndef ZB_VERSION_H
#define ZB_VERSION_H

extern const char zb_git_commit[]; /* short hash, "" outside a git checkout */
#define ZB_GIT_COMMIT zb_git_commit

#endif

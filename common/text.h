/*
 * text.h - user text that must stay one line: names refused when they hold a
 * control character, and any text shown in a one-line message with its control
 * characters written as \xNN.
 *
 * A name (of a model, a machine or its parts, a measured configuration) ends up in
 * tables, CSV cells, plot labels and database rows; a newline in it would split a
 * row or a message, an escape sequence would reach the terminal. So names are
 * checked where they are read and refused with one line.
 */
#ifndef ZB_TEXT_H
#define ZB_TEXT_H

#include <stddef.h>

#include "common/error.h"

/* The first control character of s (a byte below 0x20, or 0x7f), NULL when none. */
const char *zb_text_control(const char *s);

/* s for a one-line message: control characters as \xNN, cut short (with "...") to
 * fit buf; returns buf. */
const char *zb_text_show(const char *s, char *buf, size_t n);

/* ZB_E_INPUT "<what> '<s, shown>' has a control character (0xNN)" when s holds one. */
zb_status zb_text_check_name(const char *what, const char *s, zb_error *err);

#endif

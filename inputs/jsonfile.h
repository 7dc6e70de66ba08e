/*
 * jsonfile.h - how zbench reads its JSON input files (hardware and model files,
 * DeepSpeed and Hugging Face configs): through jansson, duplicate keys rejected,
 * the top level an object, and every error one line that names the file.
 */
#ifndef ZB_JSONFILE_H
#define ZB_JSONFILE_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"

/* Open and parse path; the caller json_decref()s *out. Errors (ZB_E_INPUT):
 * "cannot open F: reason", "F: malformed JSON at line L column C: text",
 * "F: top level must be an object (got an array)". */
zb_status zb_json_load_object(const char *path, json_t **out, zb_error *err);

/* A value as it appeared in the file, for "(got ...)", cut short if long. */
void zb_json_show(const json_t *v, char *buf, size_t n);

/* "an object", "a string", "a number", ... for messages. */
const char *zb_json_type_name(const json_t *v);

#endif

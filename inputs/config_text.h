/*
 * config_text.h - the JSON text of many configurations, fast: a sweep stores
 * zb_config_to_json(c) with every row, and building it from scratch (jansson
 * objects, a search for the shortest exact precision over every real) costs more
 * than simulating the row. Consecutive rows share most of it: the hardware part
 * repeats every H rows, the model and policy parts change once per schedule. So
 * each part's text is cached and the document is assembled by concatenation; the
 * text is byte for byte what zb_config_to_json returns (tests/test_config_text.c).
 *
 * One cache per thread.
 */
#ifndef ZB_CONFIG_TEXT_H
#define ZB_CONFIG_TEXT_H

#include "core/config.h"

typedef struct zb_config_text zb_config_text;

zb_config_text *zb_config_text_new(void);
void zb_config_text_free(zb_config_text *t);

/* zb_config_to_json(c)'s text, valid until the next call. hw_slot (>= 0) says
 * which cached hardware part to try (a sweep passes the row's hardware index);
 * parts are compared in full, so a wrong slot costs a rebuild, never a wrong text. */
const char *zb_config_text_get(zb_config_text *t, const zb_config *c, long hw_slot);

#endif

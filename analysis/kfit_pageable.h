/*
 * kfit_pageable.h - the DRAM queue of pageable uploads (execprofile.h pageable_queue)
 * fitted from the executor's measured copies (kfit.h).
 *
 * A pageable H2D copy is a CPU memcpy into the driver's pinned staging buffer and then
 * a DMA; beside CPU Adam the memcpy's loads wait in the same DRAM queue as Adam's, and
 * longer than the DMA engine's reads (measured on the H200 machine: x0.57 of the lone
 * rate beside 8 Adam threads, where a pinned upload keeps x0.74). The queue has the
 * pinned one's form (sim/kernels.c zb_exec_dram): rate alone / (1 + k u / (1 - u)), u
 * the DRAM utilization of Adam and of the other direction.
 */
#ifndef ZB_KFIT_PAGEABLE_H
#define ZB_KFIT_PAGEABLE_H

#include "analysis/kfit.h"

/* k from the H2D copies (>= 1 MiB, in the window) of the used items (use NULL: all) that
 * are --pageable at the native link and that CPU Adam overlaps (a fraction f > 50 % of the
 * copy): each copy's rate beside Adam (its mean rate, the part 1 - f at the lone rate) solved
 * for k at its utilization, against hw's lone pageable rates (link.pageable_*, the duplex
 * fractions when D2H overlaps it > 90 %; copies D2H overlaps 10-90 % are left out), Adam's
 * demand its configuration's rate alone on hw (capped by what the copies' 3x DRAM traffic
 * leaves of cpu.dram_Bps); weighted by the time beside Adam. 0 when fewer than 3 copies
 * qualify; *copies gets their count. */
double zb_kfit_pageable_queue(const zb_kfit_set *s, const unsigned char *use, const zb_hw *hw, int *copies);

/* Every pageable term of hw from the used items: the lone rates (link.pageable_h2d_Bps,
 * pageable_d2h_Bps: zb_kfit_copy_rate of the pageable copies CPU Adam does not overlap),
 * then pageable_queue on them (with the pinned DRAM queue, h2d_queue > 0: it is the only
 * model that reads it); each only where enough copies show it (else hw's stays).
 * 1 when any was fitted; *copies gets the copies used. Part of zb_kfit_fit, after the
 * DRAM queue; and what calibrate --fit-host adds when the anchor has a pageable
 * configuration (kfit_host.h). */
int zb_kfit_pageable_fit(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw, int *copies);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A session's life: start, stop, the event loop, restarts, spawn, status.
 * (Being written: nothing can start a session yet, so there is nothing to
 * stop.)
 */
#include "session-internal.h"

void
session_stop_all(struct clip_session *s, unsigned grace_ms)
{
	(void)s;
	(void)grace_ms;
}

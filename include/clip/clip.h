/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libclip: the isolation model of CLIP OS as a C library.
 * The umbrella header: includes every public header. See libclip(3).
 */
#ifndef CLIP_CLIP_H
#define CLIP_CLIP_H

#include <clip/version.h>
#include <clip/ctx.h>
#include <clip/keys.h>
#include <clip/level.h>
#include <clip/label.h>
#include <clip/selinux.h>
#include <clip/cage.h>
#include <clip/exec.h>
#include <clip/tpm.h>
#include <clip/lsm.h>
#include <clip/audit.h>
#include <clip/policy.h>
#include <clip/mediator.h>
#include <clip/transfer.h>
#include <clip/agent.h>
#include <clip/feed.h>
#include <clip/session.h>

#endif

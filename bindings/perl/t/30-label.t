# SPDX-License-Identifier: LGPL-2.1-or-later
use v5.36;
use Test::More;
use Clip;
ok(1, "placeholder");
done_testing;

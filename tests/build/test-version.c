/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The loaded library, its headers and the meson project agree on the
 * version (libinput test-library-version).
 *
 * usage: test-version PROJECT_VERSION
 */
#include <stdio.h>
#include <string.h>

#include <clip/clip.h>

int
main(int argc, char **argv)
{
	char from_parts[64];
	const char *loaded = clip_version();

	if (argc != 2) {
		fprintf(stderr, "usage: %s PROJECT_VERSION\n", argv[0]);
		return 2;
	}
	if (!loaded || strcmp(loaded, CLIP_VERSION_STRING) != 0) {
		fprintf(stderr, "clip_version() is \"%s\", CLIP_VERSION_STRING is \"%s\"\n",
			loaded ? loaded : "(null)", CLIP_VERSION_STRING);
		return 1;
	}
	if (strcmp(loaded, argv[1]) != 0) {
		fprintf(stderr, "clip_version() is \"%s\", the meson project version is \"%s\"\n",
			loaded, argv[1]);
		return 1;
	}
	snprintf(from_parts, sizeof(from_parts), "%d.%d.%d", CLIP_VERSION_MAJOR, CLIP_VERSION_MINOR,
		 CLIP_VERSION_MICRO);
	if (strcmp(from_parts, CLIP_VERSION_STRING) != 0) {
		fprintf(stderr, "CLIP_VERSION_MAJOR.MINOR.MICRO is %s, CLIP_VERSION_STRING is %s\n",
			from_parts, CLIP_VERSION_STRING);
		return 1;
	}
	if (!CLIP_VERSION_AT_LEAST(CLIP_VERSION_MAJOR, CLIP_VERSION_MINOR, CLIP_VERSION_MICRO) ||
	    CLIP_VERSION_AT_LEAST(CLIP_VERSION_MAJOR, CLIP_VERSION_MINOR, CLIP_VERSION_MICRO + 1) ||
	    CLIP_VERSION_AT_LEAST(CLIP_VERSION_MAJOR + 1, 0, 0)) {
		fprintf(stderr, "CLIP_VERSION_AT_LEAST() is wrong around %s\n",
			CLIP_VERSION_STRING);
		return 1;
	}
	printf("libclip %s\n", loaded);
	return 0;
}

/*
 * regex_classify.c - regex-classify: the regex baseline as a program, for
 * the whole-process comparison with mysteer-classify on the same file.
 * Reads statements from stdin (one a line, or NUL-separated with --nul) and
 * prints "read" or "write" a line, with the rules of regex_rules.h.
 */
#include <stdlib.h>
#include <string.h>

#include "regex_rules.h"

int main(int argc, char **argv)
{
	struct rx_rules rx;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int delim = '\n';
	static char obuf[1 << 16];

	if (argc == 2 && !strcmp(argv[1], "--nul")) {
		delim = '\0';
	} else if (argc != 1) {
		fputs("usage: regex-classify [--nul]\n", stderr);
		return 2;
	}
	if (rx_init(&rx) < 0)
		return 1;
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	while ((n = getdelim(&line, &cap, delim, stdin)) >= 0) {
		if (n > 0 && line[n - 1] == delim)
			n--;
		puts(rx_is_write(&rx, line, (size_t)n) ? "write" : "read");
	}
	free(line);
	rx_free(&rx);
	return fflush(stdout) == 0 ? 0 : 1;
}

/*
 * main.c - mysteer-classify: the proxy's classification decision from the
 * command line, for tests, audits and the bench's whole-process comparison.
 *
 * Reads statements from stdin (one a line, or NUL-separated with --nul) and
 * prints one token a line (--explain: token, TAB, reason, TAB, flags). A
 * "USE db" statement changes the current schema for the lines after it, the
 * way a session does, so that unqualified routine names resolve as they would
 * on the server.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classify/classify.h"

static const char usage[] = "usage: mysteer-classify [--nul] [--explain] [--routines FILE] "
                            "[--db NAME] [--trust-routines]\n";

struct cli {
	bool nul, explain;
	struct cls_options opt;
	char *db;
	size_t dbcap;
};

static int set_db(struct cli *c, const char *s, size_t n)
{
	if (n + 1 > c->dbcap) {
		char *d = realloc(c->db, n + 1);

		if (!d)
			return -1;
		c->db = d;
		c->dbcap = n + 1;
	}
	memcpy(c->db, s, n);
	c->db[n] = '\0';
	c->opt.current_db = c->db;
	c->opt.current_db_len = n;
	return 0;
}

static void print_explain(const struct cls_result *r)
{
	bool first = true;

	printf("%s\t%s\t", cls_token_name(r->token), cls_reason_name(r->reason));
	for (unsigned b = 0; cls_flag_name(b); b++) {
		if (!(r->flags & (1u << b)))
			continue;
		printf("%s%s", first ? "" : ",", cls_flag_name(b));
		first = false;
	}
	if (first)
		fputs("-", stdout);
	putchar('\n');
}

static int run(struct cli *c)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int delim = c->nul ? '\0' : '\n';

	while ((n = getdelim(&line, &cap, delim, stdin)) >= 0) {
		struct cls_result r;

		if (n > 0 && line[n - 1] == delim)
			n--;
		if (!c->nul && n > 0 && line[n - 1] == '\r')
			n--;
		cls_classify(&c->opt, line, (size_t)n, &r);
		if (c->explain)
			print_explain(&r);
		else
			puts(cls_token_name(r.token));
		if ((r.flags & CLS_F_USE) && set_db(c, line + r.db_off, r.db_len) < 0) {
			perror("mysteer-classify");
			free(line);
			return 1;
		}
	}
	free(line);
	if (ferror(stdin) || fflush(stdout) != 0) {
		perror("mysteer-classify");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cli c = {0};
	const char *routines = NULL;
	struct cls_routines *rt = NULL;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--nul")) {
			c.nul = true;
		} else if (!strcmp(argv[i], "--explain")) {
			c.explain = true;
		} else if (!strcmp(argv[i], "--trust-routines")) {
			c.opt.trust_routines = true;
		} else if (!strcmp(argv[i], "--routines") && i + 1 < argc) {
			routines = argv[++i];
		} else if (!strcmp(argv[i], "--db") && i + 1 < argc) {
			i++;
			if (set_db(&c, argv[i], strlen(argv[i])) < 0)
				return 1;
		} else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (routines) {
		char err[512];

		rt = cls_routines_new();
		if (!rt || cls_routines_load_tsv(rt, routines, err, sizeof(err)) < 0) {
			fprintf(stderr, "mysteer-classify: %s\n", rt ? err : "out of memory");
			cls_routines_free(rt);
			return 1;
		}
		c.opt.routines = rt;
	}
	static char obuf[1 << 16];
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	rc = run(&c);
	cls_routines_free(rt);
	free(c.db);
	return rc;
}

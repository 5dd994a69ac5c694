/*
 * Shared-secret auth (common/auth.h): known answers for every MAC the
 * protocol defines, that a proof binds key, role and both nonces, that a
 * sealed message survives no change of a bit, the replay window, the
 * secret's sources, and the auth matrix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/auth.h"
#include "common/msg.h"
#include "common/util.h"

static struct auth_secret	K = { UNCONST("0123456789abcdef"), 16 };
static uint8_t			NW[AUTH_NONCE_LEN], NC[AUTH_NONCE_LEN];

/*
 * test_auth is linked with -Wl,--wrap=free (the Makefile): every free() of
 * the archives' objects comes here first, so a test can see what a block
 * held when it was let go -- the secret's key must be zeros by then, not
 * left for the next malloc or a core dump to find.
 */
void			 __wrap_free(void *);
void			 __real_free(void *);
static const void	*watch;		/* the block to look at, until freed */
static size_t		 watch_len;
static bool		 watch_wiped;	/* ... whether it was all zeros */

void
__wrap_free(void *p)
{
	const unsigned char	*b = p;
	size_t			 i;

	if (p != NULL && p == watch) {
		watch_wiped = true;
		for (i = 0; i < watch_len; i++)
			if (b[i] != 0)
				watch_wiped = false;
		watch = NULL;
	}
	__real_free(p);
}

static void
unhex(const char *h, uint8_t *out, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		sscanf(h + 2 * i, "%2hhx", &out[i]);
}

static int
setup(void **state)
{
	int	i;

	(void)state;
	for (i = 0; i < AUTH_NONCE_LEN; i++) {
		NW[i] = (uint8_t)i;
		NC[i] = (uint8_t)(32 + i);
	}
	return 0;
}

/* Computed independently (Python's hmac) from the formulas in auth.h. */
static void
test_known_answers(void **state)
{
	struct auth_session	 s;
	uint8_t			 got[AUTH_MAC_LEN], want[AUTH_MAC_LEN];
	uint8_t			*buf = malloc(MSG_HDR_LEN);
	size_t			 len = MSG_HDR_LEN;

	(void)state;
	auth_proof(&K, AUTH_COORDINATOR, NW, NC, got);
	unhex("1d66b0279578ba364c7c5546bc88c785cbd873ffdf16dbcce5b26daf293d4448", want, 32);
	assert_memory_equal(got, want, 32);
	auth_proof(&K, AUTH_WORKER, NW, NC, got);
	unhex("ab4c7e718b20a2dcf8369fef327cbb5387228d24137e63f897cad3b0f8440f70", want, 32);
	assert_memory_equal(got, want, 32);
	auth_session_init(&s, &K, NW, NC);
	unhex("fe32664561267d8495136468c42d1d34ba69014bac513e0ef958ad6e9a701824", want, 32);
	assert_memory_equal(s.key, want, 32);
	/* HMAC(S, 'w' || u64 7 || message) after the message and the seq. */
	memcpy(buf, "SOAK\x00\x02\x00\x0b\x00\x00\x00\x00", MSG_HDR_LEN);
	auth_seal(&s, AUTH_TO_COORDINATOR, 7, &buf, &len);
	assert_int_equal(len, MSG_HDR_LEN + AUTH_TRAILER_LEN);
	unhex("0000000000000007", want, 8);
	assert_memory_equal(buf + MSG_HDR_LEN, want, 8);
	unhex("a6df682c648cddefb9e6817f5edb4c9d2f41612d2687db0e2853715f14b52023", want, 32);
	assert_memory_equal(buf + MSG_HDR_LEN + 8, want, 32);
	free(buf);
}

static void
test_proof_binds_everything(void **state)
{
	struct auth_secret	 other = { UNCONST("0123456789abcdeF"), 16 };
	uint8_t			 proof[AUTH_MAC_LEN], n2[AUTH_NONCE_LEN];
	size_t			 i;

	(void)state;
	auth_proof(&K, AUTH_COORDINATOR, NW, NC, proof);
	assert_true(auth_proof_ok(&K, AUTH_COORDINATOR, NW, NC, proof));
	/* The worker's proof is not the coordinator's, nor the other way. */
	assert_false(auth_proof_ok(&K, AUTH_WORKER, NW, NC, proof));
	assert_false(auth_proof_ok(&other, AUTH_COORDINATOR, NW, NC, proof));
	assert_false(auth_proof_ok(&K, AUTH_COORDINATOR, NC, NW, proof));
	for (i = 0; i < AUTH_NONCE_LEN; i++) {
		memcpy(n2, NC, sizeof(n2));
		n2[i] ^= 1;
		assert_false(auth_proof_ok(&K, AUTH_COORDINATOR, NW, n2, proof));
	}
	for (i = 0; i < AUTH_MAC_LEN * 8; i++) {
		proof[i / 8] ^= (uint8_t)(1 << (i % 8));
		assert_false(auth_proof_ok(&K, AUTH_COORDINATOR, NW, NC, proof));
		proof[i / 8] ^= (uint8_t)(1 << (i % 8));
	}
}

static void
test_seal_open(void **state)
{
	struct auth_session	 s, t;
	struct auth_secret	 other = { UNCONST("another secret!!"), 16 };
	char			 err[ERR_LEN];
	const char		*text = "SOAK message bytes";
	uint8_t			*buf = NULL;
	size_t			 len = strlen(text), i, mlen;
	uint64_t		 seq;

	(void)state;
	auth_session_init(&s, &K, NW, NC);
	buf = malloc(len);
	memcpy(buf, text, len);
	auth_seal(&s, AUTH_TO_WORKER, 42, &buf, &len);
	assert_int_equal(auth_open(&s, AUTH_TO_WORKER, buf, len, &seq, &mlen, err), 0);
	assert_true(seq == 42);
	assert_int_equal(mlen, strlen(text));
	assert_memory_equal(buf, text, mlen);
	/* The other direction, another session, any bit of any byte: refused. */
	assert_int_equal(auth_open(&s, AUTH_TO_COORDINATOR, buf, len, &seq, &mlen, err), -1);
	assert_non_null(strstr(err, "MAC"));
	auth_session_init(&t, &other, NW, NC);
	assert_int_equal(auth_open(&t, AUTH_TO_WORKER, buf, len, &seq, &mlen, err), -1);
	for (i = 0; i < len * 8; i++) {
		buf[i / 8] ^= (uint8_t)(1 << (i % 8));
		assert_int_equal(auth_open(&s, AUTH_TO_WORKER, buf, len, &seq, &mlen,
		    err), -1);
		buf[i / 8] ^= (uint8_t)(1 << (i % 8));
	}
	for (i = 0; i < len; i++)
		assert_int_equal(auth_open(&s, AUTH_TO_WORKER, buf, i, &seq, &mlen,
		    err), -1);
	free(buf);
	auth_session_clear(&s);
	for (i = 0; i < sizeof(s.key); i++)
		assert_int_equal(s.key[i], 0);
}

static void
test_seq_window(void **state)
{
	struct auth_session	s;
	char			err[ERR_LEN];
	uint64_t		i;

	(void)state;
	auth_session_init(&s, &K, NW, NC);
	/* 0 is the WELCOME's: never a request's. */
	assert_int_equal(auth_seq_accept(&s, 0, err), -1);
	assert_int_equal(auth_seq_accept(&s, 1, err), 0);
	assert_int_equal(auth_seq_accept(&s, 1, err), -1);
	assert_non_null(strstr(err, "replayed"));
	/* Two contexts overtake each other: 3 before 2, both once. */
	assert_int_equal(auth_seq_accept(&s, 3, err), 0);
	assert_int_equal(auth_seq_accept(&s, 2, err), 0);
	assert_int_equal(auth_seq_accept(&s, 2, err), -1);
	assert_int_equal(auth_seq_accept(&s, 3, err), -1);
	/* Far ahead is fine; too far behind is too old. */
	assert_int_equal(auth_seq_accept(&s, 1000, err), 0);
	assert_int_equal(auth_seq_accept(&s, 1000 - AUTH_WINDOW, err), -1);
	assert_non_null(strstr(err, "too old"));
	assert_int_equal(auth_seq_accept(&s, 1000 - AUTH_WINDOW + 1, err), 0);
	for (i = 1001; i < 1200; i++)
		assert_int_equal(auth_seq_accept(&s, i, err), 0);
	for (i = 1200 - AUTH_WINDOW + 1; i < 1200; i++)
		assert_int_equal(auth_seq_accept(&s, i, err), -1);
	/*
	 * A jump of exactly the window forgets every seq seen: 1263 after
	 * 1199 leaves 1199 too old and 1200..1262 never seen (a shift by 64
	 * is no shift on x86: the bits of 1136..1198 must not stay as theirs).
	 */
	assert_int_equal(auth_seq_accept(&s, 1199 + AUTH_WINDOW, err), 0);
	assert_int_equal(auth_seq_accept(&s, 1199, err), -1);
	assert_non_null(strstr(err, "too old"));
	for (i = 1200; i < 1199 + AUTH_WINDOW; i++)
		assert_int_equal(auth_seq_accept(&s, i, err), 0);
}

static char *
write_secret(const char *dir, const char *text, mode_t mode)
{
	char	*path = xasprintf("%s/secret", dir);

	unlink(path);
	assert_int_equal(write_file(path, text, strlen(text), NULL), 0);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static void
test_secret_sources(void **state)
{
	struct auth_secret	 s;
	char			 dir[] = "/tmp/soak-auth-XXXXXX", err[ERR_LEN], *path;

	(void)state;
	assert_non_null(mkdtemp(dir));
	unsetenv("SOAK_SECRET");
	assert_int_equal(auth_secret_load(NULL, &s, err), 0);
	assert_int_equal(s.len, 0);
	/* A file others can read is refused, naming the file and the fix. */
	path = write_secret(dir, "a secret of more than sixteen\n", 0644);
	assert_int_equal(auth_secret_load(path, &s, err), -1);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "chmod 600"));
	chmod(path, 0640);
	assert_int_equal(auth_secret_load(path, &s, err), -1);
	chmod(path, 0600);
	assert_int_equal(auth_secret_load(path, &s, err), 0);
	assert_int_equal(s.len, strlen("a secret of more than sixteen"));
	assert_memory_equal(s.key, "a secret of more than sixteen", s.len);
	/* Let go wiped: the key is zeros when it reaches free(). */
	watch = s.key;
	watch_len = s.len;
	watch_wiped = false;
	auth_secret_free(&s);
	assert_null(s.key);
	assert_null(watch);		/* it was freed */
	assert_true(watch_wiped);
	free(path);
	path = write_secret(dir, "short\n", 0600);
	assert_int_equal(auth_secret_load(path, &s, err), -1);
	assert_non_null(strstr(err, "at least 16"));
	assert_non_null(strstr(err, "--secret-file"));	/* which source, */
	assert_non_null(strstr(err, path));		/* ... and which file */
	free(path);
	/* One newline is the line's end, not a byte of the secret: none is left. */
	path = write_secret(dir, "\n", 0600);
	assert_int_equal(auth_secret_load(path, &s, err), -1);
	assert_non_null(strstr(err, "is 0 bytes"));
	free(path);
	assert_int_equal(auth_secret_load("/nonexistent/secret", &s, err), -1);
	assert_non_null(strstr(err, "/nonexistent/secret"));
	/* The environment: read once, then gone for every child. */
	setenv("SOAK_SECRET", "from the environment", 1);
	assert_int_equal(auth_secret_load(NULL, &s, err), 0);
	assert_memory_equal(s.key, "from the environment", s.len);
	assert_null(getenv("SOAK_SECRET"));
	auth_secret_free(&s);
	setenv("SOAK_SECRET", "too short", 1);
	assert_int_equal(auth_secret_load(NULL, &s, err), -1);
	assert_non_null(strstr(err, "SOAK_SECRET"));
	rm_rf(dir);
}

static void
test_nonces_differ(void **state)
{
	uint8_t	a[AUTH_NONCE_LEN], b[AUTH_NONCE_LEN];
	char	err[ERR_LEN];

	(void)state;
	assert_int_equal(auth_nonce(a, err), 0);
	assert_int_equal(auth_nonce(b, err), 0);
	assert_memory_not_equal(a, b, AUTH_NONCE_LEN);
}

/* The matrix: (role, url, options) -> allowed, insecure, or refused. */
static void
test_policy_matrix(void **state)
{
	static const struct {
		enum auth_role	 role;
		const char	*url;
		bool		 secret, insecure;
		const char	*cert, *ca, *client_ca, *name;
		int		 want;
		const char	*says;
	} cases[] = {
		{ AUTH_COORDINATOR, "ipc:///tmp/x", 0, 0, 0, 0, 0, 0, 0, NULL },
		{ AUTH_COORDINATOR, "tcp://0.0.0.0:7070", 0, 0, 0, 0, 0, 0, -1, "SOAK_SECRET" },
		{ AUTH_COORDINATOR, "tcp://0.0.0.0:7070", 1, 0, 0, 0, 0, 0, 0, NULL },
		{ AUTH_COORDINATOR, "tcp://0.0.0.0:7070", 0, 1, 0, 0, 0, 0, 1, "not authenticated" },
		{ AUTH_COORDINATOR, "tls+tcp://h:1", 0, 0, 0, 0, 0, 0, -1, "--tls-cert" },
		{ AUTH_COORDINATOR, "tls+tcp://h:1", 0, 0, "c", 0, 0, 0, -1, "--tls-client-ca" },
		{ AUTH_COORDINATOR, "tls+tcp://h:1", 0, 1, "c", 0, 0, 0, 1, "not authenticated" },
		{ AUTH_COORDINATOR, "tls+tcp://h:1", 0, 0, "c", 0, "ca", 0, 0, NULL },
		{ AUTH_COORDINATOR, "tls+tcp://h:1", 1, 0, "c", 0, 0, 0, 0, NULL },
		{ AUTH_COORDINATOR, "tcp://h:1", 1, 0, "c", 0, 0, 0, -1, "tls+tcp://" },
		{ AUTH_COORDINATOR, "tls+tcp://h:1", 1, 0, "c", "ca", 0, 0, -1, "worker options" },
		/* each --tls-* option alone needs tls+tcp:// */
		{ AUTH_COORDINATOR, "tcp://h:1", 1, 0, 0, 0, "ca", 0, -1, "tls+tcp://" },
		{ AUTH_COORDINATOR, "tcp://h:1", 1, 0, 0, 0, 0, "n", -1, "tls+tcp://" },
		{ AUTH_WORKER, "ipc:///tmp/x", 0, 0, 0, 0, 0, 0, 0, NULL },
		{ AUTH_WORKER, "tcp://h:1", 0, 0, 0, 0, 0, 0, -1, "--tls-ca" },
		{ AUTH_WORKER, "tcp://h:1", 1, 0, 0, 0, 0, 0, 0, NULL },
		{ AUTH_WORKER, "tcp://h:1", 0, 1, 0, 0, 0, 0, 1, "not authenticated" },
		{ AUTH_WORKER, "tls+tcp://h:1", 0, 0, 0, 0, 0, 0, -1, "SOAK_SECRET" },
		{ AUTH_WORKER, "tls+tcp://h:1", 0, 0, "c", 0, 0, 0, -1, "--tls-ca" },
		{ AUTH_WORKER, "tls+tcp://h:1", 0, 0, 0, "ca", 0, 0, 0, NULL },
		{ AUTH_WORKER, "tls+tcp://h:1", 0, 0, 0, 0, 0, "n", -1, "give --tls-ca" },
		{ AUTH_WORKER, "tls+tcp://h:1", 0, 0, 0, "ca", "cc", 0, -1, "coordinator option" },
		{ AUTH_WORKER, "tcp://h:1", 1, 0, 0, "ca", 0, 0, -1, "tls+tcp://" },
		{ AUTH_WORKER, "tcp://h:1", 1, 0, "c", 0, 0, 0, -1, "tls+tcp://" },
		{ AUTH_WORKER, "tcp://h:1", 1, 0, 0, 0, "cc", 0, -1, "tls+tcp://" },
		{ AUTH_WORKER, "tcp://h:1", 1, 0, 0, 0, 0, "n", -1, "tls+tcp://" },
	};
	struct auth_opts	o;
	char			err[ERR_LEN], warn[ERR_LEN];
	size_t			i;
	int			rc;

	(void)state;
	for (i = 0; i < nitems(cases); i++) {
		memset(&o, 0, sizeof(o));
		if (cases[i].secret)
			o.secret = K;
		o.insecure = cases[i].insecure;
		o.tls_cert = cases[i].cert;
		o.tls_ca = cases[i].ca;
		o.tls_client_ca = cases[i].client_ca;
		o.tls_server_name = cases[i].name;
		err[0] = warn[0] = '\0';
		rc = auth_policy(cases[i].role, cases[i].url, &o, warn, err);
		if (rc != cases[i].want)
			fail_msg("case %zu (%s): %d, want %d: %s", i, cases[i].url, rc,
			    cases[i].want, err);
		if (cases[i].says && strstr(rc == 1 ? warn : err, cases[i].says) == NULL)
			fail_msg("case %zu: \"%s\" not in \"%s\"", i, cases[i].says,
			    rc == 1 ? warn : err);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_answers),
		cmocka_unit_test(test_proof_binds_everything),
		cmocka_unit_test(test_seal_open),
		cmocka_unit_test(test_seq_window),
		cmocka_unit_test(test_secret_sources),
		cmocka_unit_test(test_nonces_differ),
		cmocka_unit_test(test_policy_matrix),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}

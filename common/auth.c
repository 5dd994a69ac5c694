#include "common/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "common/log.h"
#include "common/util.h"

static const char *const proof_labels[] = {
	[AUTH_COORDINATOR] = "soak coordinator",
	[AUTH_WORKER] = "soak worker",
};
#define SESSION_LABEL	"soak session"

/* --- the shared secret --- */

static int
secret_set(struct auth_secret *s, const void *p, size_t n, const char *from, char *err)
{
	if (n < AUTH_SECRET_MIN)
		return errf(err, "the shared secret in %s is %zu bytes; it needs at least "
		    "%d (e.g. openssl rand -hex 32)", from, n, AUTH_SECRET_MIN);
	if (n > AUTH_SECRET_MAX)
		return errf(err, "the shared secret in %s is %zu bytes, more than %d",
		    from, n, AUTH_SECRET_MAX);
	s->key = xcalloc(1, n);
	memcpy(s->key, p, n);
	s->len = n;
	return 0;
}

static int
secret_read_file(const char *file, struct auth_secret *s, char *err)
{
	uint8_t		buf[AUTH_SECRET_MAX + 3];
	struct stat	st;
	size_t		n = 0;
	ssize_t		r;
	int		fd, rc = -1;
	char		e[ERR_LEN];

	/* A FIFO is refused, not waited on: a start-up must not hang. */
	if ((fd = open_regular(file, &st, e)) == -1)
		return errf(err, "--secret-file: %s", e);
	/* Like ssh's keys: a secret others can read is no longer a secret. */
	if (st.st_mode & 077) {
		errf(err, "--secret-file %s is mode %04o: group and others must have no "
		    "access to it (chmod 600 %s)", file, (unsigned)(st.st_mode & 07777), file);
		goto out;
	}
	while (n < sizeof(buf)) {
		if ((r = read(fd, buf + n, sizeof(buf) - n)) == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			errf(err, "--secret-file %s: %s", file, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	{
		char	from[ERR_LEN];

		snprintf(from, sizeof(from), "--secret-file %s", file);
		rc = secret_set(s, buf, n, from, err);
	}
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return rc;
}

int
auth_secret_load(const char *file, struct auth_secret *s, char *err)
{
	const char	*env = getenv("SOAK_SECRET");
	int		 rc = 0;

	memset(s, 0, sizeof(*s));
	if (file)
		rc = secret_read_file(file, s, err);
	else if (env && *env)
		rc = secret_set(s, env, strlen(env), "SOAK_SECRET", err);
	/* Wiped in place too: /proc/PID/environ shows the original block. */
	if (env) {
		explicit_bzero(UNCONST(env), strlen(env));
		unsetenv("SOAK_SECRET");
	}
	return rc;
}

void
auth_secret_free(struct auth_secret *s)
{
	if (s == NULL || s->key == NULL)
		return;
	explicit_bzero(s->key, s->len);
	free(s->key);
	s->key = NULL;
	s->len = 0;
}

/* --- the matrix --- */

static bool
has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

bool
auth_url_is_tls(const char *url)
{
	return has_prefix(url, "tls+tcp://") || has_prefix(url, "tls+tcp4://") ||
	    has_prefix(url, "tls+tcp6://");
}

bool
auth_url_is_ipc(const char *url)
{
	return has_prefix(url, "ipc://") || has_prefix(url, "inproc://");
}

static int
policy_coordinator(const char *url, const struct auth_opts *o, char *warn, char *err)
{
	bool	tls = auth_url_is_tls(url), secret = o->secret.len > 0;

	if (tls && o->tls_cert == NULL)
		return errf(err, "%s needs --tls-cert PEM (this coordinator's certificate "
		    "and its key in one file)", url);
	if (o->tls_ca || o->tls_server_name)
		return errf(err, "--tls-ca and --tls-server-name are worker options; "
		    "the coordinator takes --tls-client-ca");
	if (auth_url_is_ipc(url) || (secret || o->tls_client_ca))
		return 0;
	if (!o->insecure) {
		if (tls)
			return errf(err, "%s with --tls-cert alone leaves workers "
			    "unauthenticated: add --tls-client-ca PEM (workers then need "
			    "--tls-cert), or set SOAK_SECRET or --secret-file FILE", url);
		return errf(err, "%s would be open to anyone: set SOAK_SECRET or "
		    "--secret-file FILE (the same on every worker), or listen on "
		    "tls+tcp:// with --tls-cert PEM and --tls-client-ca PEM", url);
	}
	snprintf(warn, ERR_LEN, "--insecure: workers on %s are not authenticated%s; "
	    "anyone who reaches it gets the config and can submit results", url,
	    tls ? "" : " and cannot authenticate this coordinator");
	return 1;
}

static int
policy_worker(const char *url, const struct auth_opts *o, char *warn, char *err)
{
	bool	tls = auth_url_is_tls(url), secret = o->secret.len > 0;

	if (o->tls_client_ca)
		return errf(err, "--tls-client-ca is a coordinator option; a worker "
		    "verifies its coordinator with --tls-ca");
	if (o->tls_server_name && o->tls_ca == NULL)
		return errf(err, "--tls-server-name is the name checked in the "
		    "certificate --tls-ca verifies; give --tls-ca too");
	if (auth_url_is_ipc(url) || secret || (tls && o->tls_ca))
		return 0;
	if (!o->insecure)
		return errf(err, "cannot authenticate the coordinator at %s: set "
		    "SOAK_SECRET or --secret-file FILE (the coordinator's secret), or "
		    "dial tls+tcp:// with --tls-ca PEM", url);
	snprintf(warn, ERR_LEN, "--insecure: the coordinator at %s is not "
	    "authenticated; whoever answers there decides what this worker runs", url);
	return 1;
}

int
auth_policy(enum auth_role role, const char *url, const struct auth_opts *o,
    char *warn, char *err)
{
	if (!auth_url_is_tls(url) && (o->tls_cert || o->tls_ca || o->tls_client_ca ||
	    o->tls_server_name))
		return errf(err, "the --tls-* options need a tls+tcp:// URL, not %s", url);
	if (role == AUTH_COORDINATOR)
		return policy_coordinator(url, o, warn, err);
	return policy_worker(url, o, warn, err);
}

/* --- HMAC-SHA256 --- */

struct part {
	const void	*p;
	size_t		 n;
};

/* EVP_MAC, OpenSSL 3's interface; fetched per call (cheap, thread-safe). */
static void
hmac(const uint8_t *key, size_t klen, const struct part *parts, size_t nparts,
    uint8_t out[AUTH_MAC_LEN])
{
	OSSL_PARAM	 params[2];
	EVP_MAC		*mac;
	EVP_MAC_CTX	*ctx = NULL;
	size_t		 i, outl = 0;
	int		 ok;

	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    UNCONST("SHA256"), 0);
	params[1] = OSSL_PARAM_construct_end();
	ok = (mac = EVP_MAC_fetch(NULL, "HMAC", NULL)) != NULL &&
	    (ctx = EVP_MAC_CTX_new(mac)) != NULL &&
	    EVP_MAC_init(ctx, key, klen, params) == 1;
	for (i = 0; ok && i < nparts; i++)
		ok = EVP_MAC_update(ctx, parts[i].p, parts[i].n) == 1;
	ok = ok && EVP_MAC_final(ctx, out, &outl, AUTH_MAC_LEN) == 1 &&
	    outl == AUTH_MAC_LEN;
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
	if (!ok)
		fatalx("libcrypto: HMAC-SHA256 failed");
}

int
auth_nonce(uint8_t nonce[AUTH_NONCE_LEN], char *err)
{
	size_t	n = 0;
	ssize_t	r;

	while (n < AUTH_NONCE_LEN) {
		if ((r = getrandom(nonce + n, AUTH_NONCE_LEN - n, 0)) == -1) {
			if (errno == EINTR)
				continue;
			return errf(err, "getrandom: %s", strerror(errno));
		}
		n += (size_t)r;
	}
	return 0;
}

void
auth_proof(const struct auth_secret *k, enum auth_role role,
    const uint8_t nw[AUTH_NONCE_LEN], const uint8_t nc[AUTH_NONCE_LEN],
    uint8_t out[AUTH_MAC_LEN])
{
	const struct part	parts[] = {
		{ proof_labels[role], strlen(proof_labels[role]) },
		{ nw, AUTH_NONCE_LEN }, { nc, AUTH_NONCE_LEN },
	};

	hmac(k->key, k->len, parts, nitems(parts), out);
}

bool
auth_proof_ok(const struct auth_secret *k, enum auth_role role,
    const uint8_t nw[AUTH_NONCE_LEN], const uint8_t nc[AUTH_NONCE_LEN],
    const uint8_t proof[AUTH_MAC_LEN])
{
	uint8_t	want[AUTH_MAC_LEN];
	bool	ok;

	auth_proof(k, role, nw, nc, want);
	ok = CRYPTO_memcmp(want, proof, AUTH_MAC_LEN) == 0;
	explicit_bzero(want, sizeof(want));
	return ok;
}

/* --- sessions --- */

void
auth_session_init(struct auth_session *s, const struct auth_secret *k,
    const uint8_t nw[AUTH_NONCE_LEN], const uint8_t nc[AUTH_NONCE_LEN])
{
	const struct part	parts[] = {
		{ SESSION_LABEL, strlen(SESSION_LABEL) },
		{ nw, AUTH_NONCE_LEN }, { nc, AUTH_NONCE_LEN },
	};

	hmac(k->key, k->len, parts, nitems(parts), s->key);
	s->hi = 0;
	s->seen = 1;
}

void
auth_session_clear(struct auth_session *s)
{
	explicit_bzero(s, sizeof(*s));
}

static void
seal_mac(const struct auth_session *s, enum auth_dir dir, const uint8_t seq[8],
    const uint8_t *msg, size_t len, uint8_t out[AUTH_MAC_LEN])
{
	const uint8_t		d = (uint8_t)dir;
	const struct part	parts[] = { { &d, 1 }, { seq, 8 }, { msg, len } };

	hmac(s->key, sizeof(s->key), parts, nitems(parts), out);
}

void
auth_seal(const struct auth_session *s, enum auth_dir dir, uint64_t seq,
    uint8_t **buf, size_t *len)
{
	uint8_t	*p = xreallocarray(*buf, *len + AUTH_TRAILER_LEN, 1);

	put_be64(p + *len, seq);
	seal_mac(s, dir, p + *len, p, *len, p + *len + 8);
	*buf = p;
	*len += AUTH_TRAILER_LEN;
}

int
auth_open(const struct auth_session *s, enum auth_dir dir, const uint8_t *buf,
    size_t len, uint64_t *seq, size_t *msglen, char *err)
{
	uint8_t		want[AUTH_MAC_LEN];
	const uint8_t	*t;
	bool		ok;

	if (len < AUTH_TRAILER_LEN)
		return errf(err, "a %zu-byte message cannot carry a session MAC", len);
	t = buf + len - AUTH_TRAILER_LEN;
	seal_mac(s, dir, t, buf, len - AUTH_TRAILER_LEN, want);
	ok = CRYPTO_memcmp(want, t + 8, AUTH_MAC_LEN) == 0;
	explicit_bzero(want, sizeof(want));
	if (!ok)
		return errf(err, "bad session MAC (not from the authenticated peer, or "
		    "altered on the way)");
	*seq = get_be64(t);
	*msglen = len - AUTH_TRAILER_LEN;
	return 0;
}

int
auth_seq_accept(struct auth_session *s, uint64_t seq, char *err)
{
	uint64_t	back;

	if (seq > s->hi) {
		back = seq - s->hi;
		s->seen = back >= 64 ? 0 : s->seen << back;
		s->seen |= 1;
		s->hi = seq;
		return 0;
	}
	back = s->hi - seq;
	if (back >= AUTH_WINDOW)
		return errf(err, "sequence number %" PRIu64 " is too old (highest %"
		    PRIu64 ")", seq, s->hi);
	if (s->seen & (UINT64_C(1) << back))
		return errf(err, "sequence number %" PRIu64 " replayed", seq);
	s->seen |= UINT64_C(1) << back;
	return 0;
}

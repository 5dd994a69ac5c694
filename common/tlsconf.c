#include "common/tlsconf.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/log.h"
#include "common/util.h"

#define PEM_CAP	(1u << 20)

/* --- checking the files --- */

/* A key with a passphrase would make OpenSSL prompt on the terminal. */
static int
no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf; (void)size; (void)rwflag; (void)u;
	return -1;
}

static void
asn1_time_str(const ASN1_TIME *t, char *buf, size_t size)
{
	BIO	*b = BIO_new(BIO_s_mem());
	int	 n = 0;

	if (b && ASN1_TIME_print(b, t))
		n = BIO_read(b, buf, (int)size - 1);
	buf[n > 0 ? n : 0] = '\0';
	BIO_free(b);
}

/* Expired or not yet valid, with the date: mbedTLS would just fail. */
static int
check_dates(X509 *x, const char *opt, const char *path, const char *whose, char *err)
{
	char	when[64];

	if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0) {
		asn1_time_str(X509_get0_notBefore(x), when, sizeof(when));
		return errf(err, "%s %s: %s is not valid before %s", opt, path, whose, when);
	}
	if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0) {
		asn1_time_str(X509_get0_notAfter(x), when, sizeof(when));
		return errf(err, "%s %s: %s expired on %s", opt, path, whose, when);
	}
	return 0;
}

/* Workers' mbedTLS matches DNS names only: a SAN of IP addresses never matches. */
static int
check_dns_names(X509 *x, const char *opt, const char *path, char *err)
{
	GENERAL_NAMES	*g = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	int		 i, n, dns = 0;

	if (g == NULL)
		return 0;		/* no SAN: mbedTLS checks the CN */
	n = sk_GENERAL_NAME_num(g);
	for (i = 0; i < n; i++)
		if (sk_GENERAL_NAME_value(g, i)->type == GEN_DNS)
			dns++;
	GENERAL_NAMES_free(g);
	if (n > 0 && dns == 0)
		return errf(err, "%s %s: its subjectAltName has no DNS name, and workers "
		    "(mbedTLS) match only DNS names: issue it with subjectAltName=DNS:HOST",
		    opt, path);
	return 0;
}

static BIO *
pem_open(const char *opt, const char *path, char **text, char *err)
{
	char	e[ERR_LEN];
	size_t	len;
	BIO	*b;

	if ((*text = read_regular_file(path, PEM_CAP, &len, e)) == NULL) {
		errf(err, "%s: %s", opt, e);
		return NULL;
	}
	if ((b = BIO_new_mem_buf(*text, (int)len)) == NULL)
		fatalx("libcrypto: out of memory");
	return b;
}

/*
 * A certificate and its private key in one PEM file, as
 * nng_tls_config_cert_key_file wants them.  server: the coordinator's
 * (serverAuth, a DNS name), else a worker's client certificate.
 */
static int
check_cert_key(const char *opt, const char *path, bool server, char *err)
{
	X509		*x = NULL;
	EVP_PKEY	*key = NULL;
	BIO		*b;
	char		*text = NULL;
	struct stat	 st;
	int		 rc = -1, type;

	if ((b = pem_open(opt, path, &text, err)) == NULL)
		return -1;
	if ((x = PEM_read_bio_X509(b, NULL, no_passphrase, NULL)) == NULL) {
		errf(err, "%s %s: no certificate in it (it wants the certificate and its "
		    "private key, PEM, in one file)", opt, path);
		goto out;
	}
	if (check_dates(x, opt, path, "the certificate", err) == -1)
		goto out;
	if (X509_check_purpose(x, server ? X509_PURPOSE_SSL_SERVER :
	    X509_PURPOSE_SSL_CLIENT, 0) != 1) {
		errf(err, "%s %s: the certificate is not for a TLS %s (its "
		    "extendedKeyUsage lacks %s)", opt, path, server ? "server" : "client",
		    server ? "serverAuth" : "clientAuth");
		goto out;
	}
	if (server && check_dns_names(x, opt, path, err) == -1)
		goto out;
	(void)BIO_reset(b);
	if ((key = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL)) == NULL) {
		if (strstr(text, "ENCRYPTED") != NULL)
			errf(err, "%s %s: the private key is encrypted; soak needs it in "
			    "clear, protected by the file's permissions", opt, path);
		else
			errf(err, "%s %s: no private key in it (it wants the certificate "
			    "and its private key in one file: cat cert.pem key.pem)", opt, path);
		goto out;
	}
	type = EVP_PKEY_get_base_id(key);
	if (type != EVP_PKEY_RSA && type != EVP_PKEY_EC) {
		errf(err, "%s %s: an %s key; nng's TLS (mbedTLS 2.28) takes RSA or ECDSA "
		    "keys", opt, path, OBJ_nid2sn(type));
		goto out;
	}
	if (X509_check_private_key(x, key) != 1) {
		errf(err, "%s %s: the private key does not belong to the certificate",
		    opt, path);
		goto out;
	}
	if (stat(path, &st) == 0 && (st.st_mode & 077))
		log_warnx("%s %s holds a private key that group or others may read "
		    "(chmod 600 %s)", opt, path, path);
	rc = 0;
out:
	ERR_clear_error();
	EVP_PKEY_free(key);
	X509_free(x);
	BIO_free(b);
	if (text) {
		explicit_bzero(text, strlen(text));
		free(text);
	}
	return rc;
}

/* One or more CA certificates, none expired. */
static int
check_ca(const char *opt, const char *path, char *err)
{
	X509	*x;
	BIO	*b;
	char	*text = NULL;
	int	 n = 0, rc = 0;

	if ((b = pem_open(opt, path, &text, err)) == NULL)
		return -1;
	while (rc == 0 && (x = PEM_read_bio_X509(b, NULL, no_passphrase, NULL)) != NULL) {
		n++;
		rc = check_dates(x, opt, path, "a CA certificate", err);
		X509_free(x);
	}
	ERR_clear_error();
	BIO_free(b);
	free(text);
	if (rc == 0 && n == 0)
		return errf(err, "%s %s: no certificate in it (it wants the CA "
		    "certificate(s), PEM)", opt, path);
	return rc;
}

/* --- nng's configurations --- */

static int
nng_err(const char *what, const char *path, int rv, char *err)
{
	return errf(err, "%s %s: nng's TLS cannot use it: %s", what, path,
	    nng_strerror(rv));
}

int
tlsconf_listener(nng_listener l, const struct auth_opts *o, char *err)
{
	nng_tls_config	*tc = NULL;
	int		 rv, rc = -1;

	if ((rv = nng_tls_config_alloc(&tc, NNG_TLS_MODE_SERVER)) != 0)
		return errf(err, "TLS: %s (is libnng built with TLS?)", nng_strerror(rv));
	if ((rv = nng_tls_config_cert_key_file(tc, o->tls_cert, NULL)) != 0) {
		nng_err("--tls-cert", o->tls_cert, rv, err);
		goto out;
	}
	if (o->tls_client_ca) {
		if ((rv = nng_tls_config_ca_file(tc, o->tls_client_ca)) != 0) {
			nng_err("--tls-client-ca", o->tls_client_ca, rv, err);
			goto out;
		}
		rv = nng_tls_config_auth_mode(tc, NNG_TLS_AUTH_MODE_REQUIRED);
	} else
		rv = nng_tls_config_auth_mode(tc, NNG_TLS_AUTH_MODE_NONE);
	if (rv != 0 || (rv = nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, tc)) != 0) {
		errf(err, "TLS: %s", nng_strerror(rv));
		goto out;
	}
	rc = 0;
out:
	nng_tls_config_free(tc);	/* the listener holds its own reference */
	return rc;
}

/* The host of scheme://host:port or scheme://[v6]:port. */
static void
url_host(const char *url, char *host, size_t size)
{
	const char	*p = strstr(url, "://"), *end;

	p = p ? p + 3 : url;
	if (*p == '[') {
		p++;
		end = strchr(p, ']');
	} else
		end = strpbrk(p, ":/");
	if (end == NULL)
		end = p + strlen(p);
	snprintf(host, size, "%.*s", (int)(end - p), p);
}

static bool
is_ip_literal(const char *host)
{
	unsigned char	a[16];

	return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

/* The name the coordinator's certificate must carry; -1 for an IP. */
static int
server_name(const char *url, const struct auth_opts *o, char *name, size_t size,
    char *err)
{
	if (o->tls_server_name) {
		snprintf(name, size, "%s", o->tls_server_name);
		return 0;
	}
	url_host(url, name, size);
	if (o->tls_ca && is_ip_literal(name))
		return errf(err, "%s: the coordinator's certificate is checked by name, "
		    "and mbedTLS cannot match an IP address: dial a DNS name in its "
		    "certificate, or add --tls-server-name NAME", url);
	return 0;
}

/* mode: REQUIRED with a name for the real dial, OPTIONAL without for the probe. */
static int
dialer_config(nng_dialer d, const struct auth_opts *o, const char *name,
    nng_tls_auth_mode mode, char *err)
{
	nng_tls_config	*tc = NULL;
	int		 rv, rc = -1;

	if ((rv = nng_tls_config_alloc(&tc, NNG_TLS_MODE_CLIENT)) != 0)
		return errf(err, "TLS: %s (is libnng built with TLS?)", nng_strerror(rv));
	if (o->tls_ca && (rv = nng_tls_config_ca_file(tc, o->tls_ca)) != 0) {
		nng_err("--tls-ca", o->tls_ca, rv, err);
		goto out;
	}
	if (o->tls_cert && (rv = nng_tls_config_cert_key_file(tc, o->tls_cert,
	    NULL)) != 0) {
		nng_err("--tls-cert", o->tls_cert, rv, err);
		goto out;
	}
	if ((name && (rv = nng_tls_config_server_name(tc, name)) != 0) ||
	    (rv = nng_tls_config_auth_mode(tc, o->tls_ca ? mode :
	    NNG_TLS_AUTH_MODE_NONE)) != 0 ||
	    (rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, tc)) != 0) {
		errf(err, "TLS: %s", nng_strerror(rv));
		goto out;
	}
	rc = 0;
out:
	nng_tls_config_free(tc);	/* the dialer holds its own reference */
	return rc;
}

int
tlsconf_dialer(nng_dialer d, const char *url, const struct auth_opts *o, char *err)
{
	char	name[256];

	if (server_name(url, o, name, sizeof(name), err) == -1)
		return -1;
	return dialer_config(d, o, name, NNG_TLS_AUTH_MODE_REQUIRED, err);
}

int
tlsconf_check(enum auth_role role, const char *url, const struct auth_opts *o,
    char *err)
{
	char	name[256];

	if (!auth_url_is_tls(url))
		return 0;
	if (role == AUTH_COORDINATOR)
		return check_cert_key("--tls-cert", o->tls_cert, true, err) == -1 ||
		    (o->tls_client_ca && check_ca("--tls-client-ca", o->tls_client_ca,
		    err) == -1) ? -1 : 0;
	return server_name(url, o, name, sizeof(name), err) == -1 ||
	    (o->tls_ca && check_ca("--tls-ca", o->tls_ca, err) == -1) ||
	    (o->tls_cert && check_cert_key("--tls-cert", o->tls_cert, false, err) == -1) ?
	    -1 : 0;
}

/* --- saying why a handshake failed --- */

struct probe {
	pthread_mutex_t	mu;
	bool		connected, verified;
};

static void
probe_pipe_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct probe	*pr = arg;
	bool		 v = false;

	(void)ev;
	nng_pipe_get_bool(p, NNG_OPT_TLS_VERIFIED, &v);
	pthread_mutex_lock(&pr->mu);
	pr->connected = true;
	pr->verified = v;
	pthread_mutex_unlock(&pr->mu);
}

/*
 * After a failed verification, a second handshake, with verification
 * OPTIONAL: mbedTLS checks the chain (and the name) but never refuses, so
 * NNG_OPT_TLS_VERIFIED tells "another CA" (not verified) from "another
 * name" (verified once the name is left out: dialer_config gets no name).
 * It completes TLS with a peer whose certificate did not verify, which
 * may be an impostor: it sees what any TLS server sees, our client
 * certificate (--tls-cert) and a signature over this handshake's
 * transcript with its key (useless anywhere else), and nng's 8-byte SP
 * header once the pipe is up.  Not one soak message is sent on it: no
 * request is queued on the socket, which is closed as soon as the dial
 * returns, and nothing is read from it but the certificate's verdict.
 */
static int
probe(const char *url, const struct auth_opts *o, struct probe *pr)
{
	nng_socket	s;
	nng_dialer	d;
	char		err[ERR_LEN];
	int		rv;

	if ((rv = nng_req0_open(&s)) != 0)
		return rv;
	nng_pipe_notify(s, NNG_PIPE_EV_ADD_POST, probe_pipe_cb, pr);
	if ((rv = nng_dialer_create(&d, s, url)) == 0) {
		if (dialer_config(d, o, NULL, NNG_TLS_AUTH_MODE_OPTIONAL, err) == -1)
			rv = NNG_EINVAL;
		else
			rv = nng_dialer_start(d, 0);
	}
	nng_close(s);
	return rv;
}

void
tlsconf_explain(const char *url, const struct auth_opts *o, int rv, char *err)
{
	struct probe	pr = { .mu = PTHREAD_MUTEX_INITIALIZER };
	char		host[256], name[256];
	const char	*cert = o->tls_cert;

	url_host(url, host, sizeof(host));
	log_debug("first dial of %s: %s (%d)", url, nng_strerror(rv), rv);
	if (server_name(url, o, name, sizeof(name), NULL) == -1)
		snprintf(name, sizeof(name), "%s", host);
	if (rv != NNG_ECRYPTO && rv != NNG_EPEERAUTH && rv != NNG_ECONNSHUT &&
	    rv != NNG_ECLOSED && rv != NNG_ECONNRESET) {
		errf(err, "TLS handshake with %s failed: %s: check --tls-ca / "
		    "--tls-server-name / --tls-cert", host, nng_strerror(rv));
		return;
	}
	/* The coordinator hung up in the middle: it wants what we did not give. */
	if (rv == NNG_ECONNSHUT || rv == NNG_ECLOSED || rv == NNG_ECONNRESET) {
		if (cert)
			errf(err, "TLS handshake with %s failed: the coordinator refused "
			    "--tls-cert %s (is it from a CA in its --tls-client-ca?)", host,
			    cert);
		else
			errf(err, "TLS handshake with %s failed: the coordinator requires a "
			    "client certificate (--tls-cert PEM)", host);
		return;
	}
	if (o->tls_ca && probe(url, o, &pr) == 0) {
		bool	connected, verified;

		pthread_mutex_lock(&pr.mu);
		connected = pr.connected;
		verified = pr.verified;
		pthread_mutex_unlock(&pr.mu);
		if (connected && verified) {
			errf(err, "TLS handshake with %s failed: its certificate is signed "
			    "by a CA in --tls-ca %s but is not for \"%s\": dial the name in "
			    "its certificate, or give --tls-server-name NAME", host,
			    o->tls_ca, name);
			return;
		}
		if (connected) {
			errf(err, "TLS handshake with %s failed: its certificate does not "
			    "verify against --tls-ca %s (another CA, expired, or not a "
			    "server certificate)", host, o->tls_ca);
			return;
		}
	}
	if (cert)
		errf(err, "TLS handshake with %s failed: the coordinator refused --tls-cert "
		    "%s (is it from a CA in its --tls-client-ca?), or has no TLS server "
		    "certificate (does it listen on tls+tcp://?)", host, cert);
	else
		errf(err, "TLS handshake with %s failed: the coordinator has no TLS "
		    "server certificate this worker can check (does it listen on "
		    "tls+tcp://?)", host);
}

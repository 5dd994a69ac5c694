/*
 * TLS for tls+tcp:// URLs: nng's TLS, which on Debian 12 is mbedTLS 2.28.
 *
 * Every file is read and checked here, with OpenSSL's parser, before nng
 * sees it: nng starts a listener whose certificate is missing and reports
 * a handshake that failed for whatever reason as one generic code, so this
 * is where a user learns which file is wrong and why.
 *
 * nng does not take the server name from the URL: without one, a worker
 * would accept any certificate its CA signed, another worker's included.
 * So a worker checks the name from the URL's host unless
 * --tls-server-name says otherwise, and since mbedTLS 2.28 matches only
 * DNS names (never IP addresses in subjectAltName), a URL with an IP
 * address needs --tls-server-name.
 */
#ifndef SOAK_TLSCONF_H
#define SOAK_TLSCONF_H

#include <nng/nng.h>

#include "common/auth.h"

/*
 * Reads and checks every file role's options name for url (nothing for a
 * URL that is not tls+tcp://): certificate and key present, matching,
 * unencrypted, RSA or ECDSA, within their dates, for the right purpose
 * (serverAuth, clientAuth), a DNS name in the coordinator's; CA files
 * with at least one certificate; a worker's server name not an IP
 * address.  0, or -1 with err naming the option, the file and the fix.
 * Call before listening or dialing: the functions below assume it.
 */
int	tlsconf_check(enum auth_role role, const char *url, const struct auth_opts *o,
	    char *err);
/*
 * The coordinator's side: o->tls_cert (certificate and key in one PEM)
 * and, with o->tls_client_ca, client certificates required.  Call before
 * nng_listener_start.  0, or -1 with err.
 */
int	tlsconf_listener(nng_listener l, const struct auth_opts *o, char *err);
/*
 * A worker's side: with o->tls_ca the coordinator's certificate must chain
 * to it and carry the server name; o->tls_cert is presented when given.
 * Call before nng_dialer_start.  0, or -1 with err.
 */
int	tlsconf_dialer(nng_dialer d, const char *url, const struct auth_opts *o,
	    char *err);
/*
 * After the first dial of url failed with nng code rv: fills err with why,
 * as precisely as a second, diagnostic handshake can tell (it verifies
 * without the name, sends nothing, and is closed at once).
 */
void	tlsconf_explain(const char *url, const struct auth_opts *o, int rv, char *err);

#endif

/*
 * The database of a run: the one place that says which it is and how many
 * connections an embedded one must take (contract in iso.h).  soak run,
 * soak worker and soak replay all come through here.
 */
#include "isolation/iso.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/*
 * Connections one slot (a worker's schema, one seed at a time) may hold at
 * once beyond its turns and services:
 *   1  the control connection: schema resets, then every invariant
 *   1  the setup command's, whose backend may still be exiting when the
 *      first round's turns connect
 *   4  backends of the previous round's turns: a backend gives its slot
 *      back only when its process has exited, some time after the turn's
 *      process has gone
 *   1  the probe at a seed's deadline (iso_probe), which must not find the
 *      server full of the killed turns' backends and call it dead
 *   1  the database watch (iso_watch_start)
 */
#define ISO_DB_SLOT_SPARE	8
/*
 * Once per cluster: superuser_reserved_connections (3, and soak connects
 * as the superuser, so they count), psql by hand, a coordinator's sweep
 * of leftover schemas, and slack.
 */
#define ISO_DB_HEADROOM		20

/*
 * Per slot, every turn may hold its own connection and, through each
 * proxy whose upstream is the database, one more (the turn connecting
 * through it as well, or a duplicate delivery's fresh upstream
 * connection); every service may hold one.  So:
 *
 *   slots x (turns x (1 + proxies to the database) + services + 8) + 20
 *
 * which is never below what the three callers asked for before it was one
 * formula (soak run: workers x (turns + 6) + 20; a worker slot and a
 * replay: turns + 26).
 */
int
iso_db_max_connections(const struct cfg *cfg, int slots)
{
	int64_t	per_turn = 1, per_slot, n;
	size_t	i;

	for (i = 0; i < cfg->nproxies; i++)
		if (cfg->proxies[i].upstream_kind == CFG_UP_DATABASE)
			per_turn++;
	per_slot = (int64_t)cfg->turns * per_turn + (int64_t)cfg->nservices +
	    ISO_DB_SLOT_SPARE;
	n = (int64_t)(slots > 0 ? slots : 1) * per_slot + ISO_DB_HEADROOM;
	return n > INT_MAX ? INT_MAX : (int)n;
}

int
iso_db_open(struct iso_db *db, const struct cfg *cfg, int slots,
    const char *chosen, char *err)
{
	const char	*url = chosen;

	memset(db, 0, sizeof(*db));
	if (url == NULL || *url == '\0')
		url = getenv("SOAK_DATABASE_URL");
	if (url == NULL || *url == '\0')
		url = cfg->db_url;
	if (url != NULL && *url != '\0') {
		db->conninfo = xstrdup(url);
		return 0;
	}
	db->pg = pg_embedded_start(iso_db_max_connections(cfg, slots), err);
	if (db->pg == NULL)
		return -1;
	db->conninfo = xstrdup(pg_embedded_conninfo(db->pg));
	return 0;
}

void
iso_db_close(struct iso_db *db)
{
	if (db == NULL)
		return;
	pg_embedded_stop(db->pg);
	free(db->conninfo);
	memset(db, 0, sizeof(*db));
}

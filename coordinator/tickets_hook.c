#include "coordinator/tickets_hook.h"

#include <stdio.h>

#include "common/log.h"
#include "common/util.h"
#include "coordinator/tickets.h"

void
tickets_after_run(const char *run_dir)
{
	struct tickets_opts	o = { .dry_run = false, .out = stdout };
	char			err[ERR_LEN];
	int			nfailed = 0;

	if (tickets_file_run(run_dir, &o, &nfailed, err) == -1)
		log_warnx("tickets: %s", err);
	else if (nfailed > 0)
		log_warnx("tickets: %d filing(s) failed; the verdicts stand "
		    "(retry with: soak tickets %s)", nfailed, run_dir);
}

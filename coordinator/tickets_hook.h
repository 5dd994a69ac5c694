/* End-of-run ticket filing; a warning at worst, never a verdict change. */
#ifndef SOAK_TICKETS_HOOK_H
#define SOAK_TICKETS_HOOK_H

void	tickets_after_run(const char *run_dir);

#endif

/* signals.h — SIGINT/SIGTERM become a flag that workloads poll between
 * operations, so a stop request ends the run cleanly with results kept. */
#ifndef HERD_SIGNALS_H
#define HERD_SIGNALS_H

void signals_install(void);
int signals_caught(void); /* the signal number caught, or 0 */

#endif

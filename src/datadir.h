/*
 * Where coldstart's python/ tree (bootstrap, tracer, fdk) is installed.
 */
#ifndef COLDSTART_DATADIR_H
#define COLDSTART_DATADIR_H

/* Directory holding coldstart's python/ tree; NULL when it cannot be found. */
const char *coldstart_datadir(void);

#endif

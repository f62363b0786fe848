#ifndef KBTD_WALBUFFER_H
#define KBTD_WALBUFFER_H
#include <sqlite3.h>

/// The name of the VFS `kbtd_walbuffer_register` adds: SQLite's default ("unix") but for the
/// write-ahead log, whose frames a commit writes with one `pwrite` (kbtd_walbuffer.c).
#define KBTD_WALBUFFER_VFS "kbtd-walbuffer"

/// Registers the VFS (not as the default) once; later calls return the first call's result.
int kbtd_walbuffer_register(void);

/// The writes SQLite asked of a connection's write-ahead log opened through the VFS, and the
/// flushes that carried them (each `pwrite`s of up to 124 KiB) (what the tests read); SQLITE_NOTFOUND if the log is not open or
/// not the VFS's.
int kbtd_walbuffer_log_counts(sqlite3 *db, sqlite3_int64 *writes, sqlite3_int64 *flushes);
#endif

#ifndef KBTD_CSQLITE_SHIM_H
#define KBTD_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif

// A VFS over SQLite's default one ("unix") that writes a commit's write-ahead-log frames with one
// pwrite. SQLite writes each frame as two writes, its 24-byte header and then its page, so a
// commit of 40 pages is 80 pwrite calls, each through the file system's write path for the one or
// two pages of the file it touches (a 4,120-byte frame straddles them). Here the writes to a log
// that continue where the last one ended are copied into a buffer, and the buffer goes out in one
// pwrite a 124 KiB (the default VFS's largest write is 128 KiB - 1) when the commit frame's page arrives (its header's database-size field is not zero: the
// last frame of a transaction), before anything else is done with the log (a write elsewhere, a
// read, a sync, a truncation, its size, a lock, a file control, its close), or when it holds
// 1 MiB. A commit frame's page returns the pwrite's error to SQLite in the same call, so a commit
// SQLite reports as written is written, as with the default VFS; the log's index (shared memory),
// which makes the frames visible to readers, is only updated after that. Every other file, and
// every other method, goes to the default VFS unchanged.
#include "kbtd_walbuffer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define KBTD_WAL_FRAME_HEADER 24
#define KBTD_WAL_BUFFER_LIMIT (1 << 20)

typedef struct KbtdFile {
    sqlite3_file base;
    sqlite3_file *real;  // the default VFS's file, right after this struct
    int isWal;
    unsigned char *buffer;
    int length;
    int capacity;
    sqlite3_int64 offset;  // of buffer[0] in the log
    int commitFrame;       // the last header buffered is a commit frame's: flush after its page
    sqlite3_int64 writes;  // asked of the log by SQLite
    sqlite3_int64 flushes; // pwrites that carried them
} KbtdFile;

static sqlite3_vfs *root;
static sqlite3_vfs vfs;

// The default VFS writes at most 128 KiB - 1 bytes a call (its seekAndWrite masks the length to
// 17 bits): a flush writes pieces of 31 pages.
#define KBTD_WAL_WRITE_PIECE (31 * 4096)

static int flush(KbtdFile *file) {
    if (file->length == 0) return SQLITE_OK;
    int length = file->length;
    file->length = 0;
    file->commitFrame = 0;
    file->flushes++;
    for (int done = 0; done < length; done += KBTD_WAL_WRITE_PIECE) {
        int piece = length - done < KBTD_WAL_WRITE_PIECE ? length - done : KBTD_WAL_WRITE_PIECE;
        int rc = file->real->pMethods->xWrite(file->real, file->buffer + done, piece, file->offset + done);
        if (rc != SQLITE_OK) return rc;
    }
    return SQLITE_OK;
}

#define REAL(f) (((KbtdFile *)(f))->real)

static int xClose(sqlite3_file *f) {
    KbtdFile *file = (KbtdFile *)f;
    int rc = flush(file);
    int closed = file->real->pMethods ? file->real->pMethods->xClose(file->real) : SQLITE_OK;
    free(file->buffer);
    file->buffer = NULL;
    return rc != SQLITE_OK ? rc : closed;
}

static int xRead(sqlite3_file *f, void *data, int amount, sqlite3_int64 offset) {
    int rc = flush((KbtdFile *)f);
    if (rc != SQLITE_OK) return rc;
    return REAL(f)->pMethods->xRead(REAL(f), data, amount, offset);
}

static int xWrite(sqlite3_file *f, const void *data, int amount, sqlite3_int64 offset) {
    KbtdFile *file = (KbtdFile *)f;
    if (!file->isWal) return file->real->pMethods->xWrite(file->real, data, amount, offset);
    file->writes++;
    int rc;
    if (file->length > 0 && (offset != file->offset + file->length || file->length + amount > KBTD_WAL_BUFFER_LIMIT)) {
        if ((rc = flush(file)) != SQLITE_OK) return rc;
    }
    if (amount > KBTD_WAL_WRITE_PIECE) {
        file->flushes++;
        return file->real->pMethods->xWrite(file->real, data, amount, offset);
    }
    if (file->length + amount > file->capacity) {
        int capacity = file->capacity ? file->capacity : 64 * 1024;
        while (capacity < file->length + amount) capacity *= 2;
        unsigned char *grown = realloc(file->buffer, (size_t)capacity);
        if (!grown) {
            if ((rc = flush(file)) != SQLITE_OK) return rc;
            file->flushes++;
            return file->real->pMethods->xWrite(file->real, data, amount, offset);
        }
        file->buffer = grown;
        file->capacity = capacity;
    }
    if (file->length == 0) file->offset = offset;
    memcpy(file->buffer + file->length, data, (size_t)amount);
    file->length += amount;
    if (amount == KBTD_WAL_FRAME_HEADER) {
        // A frame's header: bytes 4-7 are the database's size in pages after a commit, else 0.
        const unsigned char *header = data;
        file->commitFrame = (header[4] | header[5] | header[6] | header[7]) != 0;
        return SQLITE_OK;
    }
    if (file->commitFrame) return flush(file);
    return SQLITE_OK;
}

static int xTruncate(sqlite3_file *f, sqlite3_int64 size) {
    int rc = flush((KbtdFile *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int xSync(sqlite3_file *f, int flags) {
    int rc = flush((KbtdFile *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int xFileSize(sqlite3_file *f, sqlite3_int64 *size) {
    int rc = flush((KbtdFile *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int xLock(sqlite3_file *f, int level) {
    int rc = flush((KbtdFile *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xLock(REAL(f), level);
}

static int xUnlock(sqlite3_file *f, int level) {
    int rc = flush((KbtdFile *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xUnlock(REAL(f), level);
}

static int xCheckReservedLock(sqlite3_file *f, int *out) {
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}

static int xFileControl(sqlite3_file *f, int op, void *arg) {
    int rc = flush((KbtdFile *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int xSectorSize(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }

static int xDeviceCharacteristics(sqlite3_file *f) {
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

static int xShmMap(sqlite3_file *f, int page, int size, int extend, void volatile **out) {
    return REAL(f)->pMethods->xShmMap(REAL(f), page, size, extend, out);
}

static int xShmLock(sqlite3_file *f, int offset, int n, int flags) {
    return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}

static void xShmBarrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }

static int xShmUnmap(sqlite3_file *f, int deleteFlag) { return REAL(f)->pMethods->xShmUnmap(REAL(f), deleteFlag); }

static int xFetch(sqlite3_file *f, sqlite3_int64 offset, int amount, void **out) {
    int rc = flush((KbtdFile *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xFetch(REAL(f), offset, amount, out);
}

static int xUnfetch(sqlite3_file *f, sqlite3_int64 offset, void *page) {
    return REAL(f)->pMethods->xUnfetch(REAL(f), offset, page);
}

static const sqlite3_io_methods methods = {
    3, xClose, xRead, xWrite, xTruncate, xSync, xFileSize, xLock, xUnlock, xCheckReservedLock, xFileControl,
    xSectorSize, xDeviceCharacteristics, xShmMap, xShmLock, xShmBarrier, xShmUnmap, xFetch, xUnfetch,
};

// The shared-memory and mmap methods exist only when the default VFS's file has them: a method
// table of a lower version than ours for the same file would make SQLite call a NULL pointer.
static sqlite3_io_methods methodsFor[4];

static int xOpen(sqlite3_vfs *unused, sqlite3_filename name, sqlite3_file *f, int flags, int *outFlags) {
    (void)unused;
    KbtdFile *file = (KbtdFile *)f;
    memset(file, 0, sizeof(KbtdFile));
    file->real = (sqlite3_file *)&file[1];
    int rc = root->xOpen(root, name, file->real, flags, outFlags);
    if (file->real->pMethods) {
        int version = file->real->pMethods->iVersion;
        if (version < 1) version = 1;
        if (version > 3) version = 3;
        file->base.pMethods = &methodsFor[version];
        file->isWal = (flags & SQLITE_OPEN_WAL) != 0;
    }
    return rc;
}

static int xDelete(sqlite3_vfs *v, const char *name, int syncDir) { (void)v; return root->xDelete(root, name, syncDir); }
static int xAccess(sqlite3_vfs *v, const char *name, int flags, int *out) { (void)v; return root->xAccess(root, name, flags, out); }
static int xFullPathname(sqlite3_vfs *v, const char *name, int n, char *out) { (void)v; return root->xFullPathname(root, name, n, out); }
static void *xDlOpen(sqlite3_vfs *v, const char *name) { (void)v; return root->xDlOpen(root, name); }
static void xDlError(sqlite3_vfs *v, int n, char *out) { (void)v; root->xDlError(root, n, out); }
static void (*xDlSym(sqlite3_vfs *v, void *handle, const char *symbol))(void) { (void)v; return root->xDlSym(root, handle, symbol); }
static void xDlClose(sqlite3_vfs *v, void *handle) { (void)v; root->xDlClose(root, handle); }
static int xRandomness(sqlite3_vfs *v, int n, char *out) { (void)v; return root->xRandomness(root, n, out); }
static int xSleep(sqlite3_vfs *v, int microseconds) { (void)v; return root->xSleep(root, microseconds); }
static int xCurrentTime(sqlite3_vfs *v, double *out) { (void)v; return root->xCurrentTime(root, out); }
static int xGetLastError(sqlite3_vfs *v, int n, char *out) { (void)v; return root->xGetLastError(root, n, out); }
static int xCurrentTimeInt64(sqlite3_vfs *v, sqlite3_int64 *out) { (void)v; return root->xCurrentTimeInt64(root, out); }

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int registered = SQLITE_ERROR;

static void registerOnce(void) {
    root = sqlite3_vfs_find(NULL);
    if (!root || root->iVersion < 2) return;
    for (int version = 1; version <= 3; version++) {
        methodsFor[version] = methods;
        methodsFor[version].iVersion = version;
        if (version < 2) {
            methodsFor[version].xShmMap = NULL;
            methodsFor[version].xShmLock = NULL;
            methodsFor[version].xShmBarrier = NULL;
            methodsFor[version].xShmUnmap = NULL;
        }
        if (version < 3) {
            methodsFor[version].xFetch = NULL;
            methodsFor[version].xUnfetch = NULL;
        }
    }
    vfs.iVersion = 2;
    vfs.szOsFile = (int)sizeof(KbtdFile) + root->szOsFile;
    vfs.mxPathname = root->mxPathname;
    vfs.zName = KBTD_WALBUFFER_VFS;
    vfs.xOpen = xOpen;
    vfs.xDelete = xDelete;
    vfs.xAccess = xAccess;
    vfs.xFullPathname = xFullPathname;
    vfs.xDlOpen = xDlOpen;
    vfs.xDlError = xDlError;
    vfs.xDlSym = xDlSym;
    vfs.xDlClose = xDlClose;
    vfs.xRandomness = xRandomness;
    vfs.xSleep = xSleep;
    vfs.xCurrentTime = xCurrentTime;
    vfs.xGetLastError = xGetLastError;
    vfs.xCurrentTimeInt64 = xCurrentTimeInt64;
    registered = sqlite3_vfs_register(&vfs, 0);
}

int kbtd_walbuffer_register(void) {
    pthread_once(&once, registerOnce);
    return registered;
}

int kbtd_walbuffer_log_counts(sqlite3 *db, sqlite3_int64 *writes, sqlite3_int64 *flushes) {
    sqlite3_file *log = NULL;
    int rc = sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &log);
    if (rc != SQLITE_OK || !log || !log->pMethods) return SQLITE_NOTFOUND;
    if (log->pMethods != &methodsFor[1] && log->pMethods != &methodsFor[2] && log->pMethods != &methodsFor[3]) return SQLITE_NOTFOUND;
    KbtdFile *file = (KbtdFile *)log;
    if (!file->isWal) return SQLITE_NOTFOUND;
    *writes = file->writes;
    *flushes = file->flushes;
    return SQLITE_OK;
}

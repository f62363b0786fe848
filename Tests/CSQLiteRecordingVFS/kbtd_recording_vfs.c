// The recording VFS (kbtd_recording_vfs.h): every method goes to SQLite's "unix" VFS; the methods
// that change what a power cut can leave on disk append an event to one log under a mutex, after
// the call succeeded (a write is in the page cache once pwrite returned). A sync event records the
// log's length when the sync began: only the events before it are covered, since writes another
// thread makes while the sync runs may or may not reach the disk with it. The shared-memory file
// is not logged: a power cut loses it and SQLite rebuilds it from the log.
#include "kbtd_recording_vfs.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct RecFile {
    sqlite3_file base;
    sqlite3_file *real;
    int file;  // index into names, -1 when not logged
} RecFile;

static sqlite3_vfs *root;
static sqlite3_vfs vfs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *prefix;
static KbtdRecordedEvent *events;
static sqlite3_int64 eventCount, eventCapacity;
static char **names;
static int nameCount, nameCapacity;

static int fileIndex(const char *path) {  // with the lock held
    for (int i = 0; i < nameCount; i++) if (strcmp(names[i], path) == 0) return i;
    if (nameCount == nameCapacity) {
        nameCapacity = nameCapacity ? nameCapacity * 2 : 8;
        names = realloc(names, sizeof(char *) * (size_t)nameCapacity);
    }
    names[nameCount] = strdup(path);
    return nameCount++;
}

static int logged(const char *path) { return prefix && path && strncmp(path, prefix, strlen(prefix)) == 0; }

static void append(int kind, int file, sqlite3_int64 offset, const void *bytes, int length) {  // with the lock held
    if (eventCount == eventCapacity) {
        eventCapacity = eventCapacity ? eventCapacity * 2 : 4096;
        events = realloc(events, sizeof(KbtdRecordedEvent) * (size_t)eventCapacity);
    }
    unsigned char *copy = NULL;
    if (length > 0) {
        copy = malloc((size_t)length);
        memcpy(copy, bytes, (size_t)length);
    }
    events[eventCount++] = (KbtdRecordedEvent){kind, file, offset, length, copy};
}

static void record(int kind, int file, sqlite3_int64 offset, const void *bytes, int length) {
    if (file < 0) return;
    pthread_mutex_lock(&lock);
    if (prefix) append(kind, file, offset, bytes, length);
    pthread_mutex_unlock(&lock);
}

#define REAL(f) (((RecFile *)(f))->real)
#define FILE_OF(f) (((RecFile *)(f))->file)

static int xClose(sqlite3_file *f) { return REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f)) : SQLITE_OK; }
static int xRead(sqlite3_file *f, void *d, int n, sqlite3_int64 o) { return REAL(f)->pMethods->xRead(REAL(f), d, n, o); }

static int xWrite(sqlite3_file *f, const void *data, int amount, sqlite3_int64 offset) {
    int rc = REAL(f)->pMethods->xWrite(REAL(f), data, amount, offset);
    if (rc == SQLITE_OK) record(KBTD_REC_WRITE, FILE_OF(f), offset, data, amount);
    return rc;
}

static int xTruncate(sqlite3_file *f, sqlite3_int64 size) {
    int rc = REAL(f)->pMethods->xTruncate(REAL(f), size);
    if (rc == SQLITE_OK) record(KBTD_REC_TRUNCATE, FILE_OF(f), size, NULL, 0);
    return rc;
}

static int xSync(sqlite3_file *f, int flags) {
    sqlite3_int64 before = kbtd_recording_count();
    int rc = REAL(f)->pMethods->xSync(REAL(f), flags);
    if (rc == SQLITE_OK) record(KBTD_REC_SYNC, FILE_OF(f), before, NULL, 0);
    return rc;
}

static int xFileSize(sqlite3_file *f, sqlite3_int64 *s) { return REAL(f)->pMethods->xFileSize(REAL(f), s); }
static int xLock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int xUnlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int xCheckReservedLock(sqlite3_file *f, int *o) { return REAL(f)->pMethods->xCheckReservedLock(REAL(f), o); }
static int xFileControl(sqlite3_file *f, int op, void *a) { return REAL(f)->pMethods->xFileControl(REAL(f), op, a); }
static int xSectorSize(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int xDeviceCharacteristics(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int xShmMap(sqlite3_file *f, int p, int s, int e, void volatile **o) { return REAL(f)->pMethods->xShmMap(REAL(f), p, s, e, o); }
static int xShmLock(sqlite3_file *f, int o, int n, int fl) { return REAL(f)->pMethods->xShmLock(REAL(f), o, n, fl); }
static void xShmBarrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int xShmUnmap(sqlite3_file *f, int d) { return REAL(f)->pMethods->xShmUnmap(REAL(f), d); }
// No memory-mapped reads: every page SQLite writes goes through xWrite (kbtd sets no mmap_size either).
static int xFetch(sqlite3_file *f, sqlite3_int64 o, int n, void **out) { (void)f; (void)o; (void)n; *out = NULL; return SQLITE_OK; }
static int xUnfetch(sqlite3_file *f, sqlite3_int64 o, void *p) { (void)f; (void)o; (void)p; return SQLITE_OK; }

static const sqlite3_io_methods methods = {
    3, xClose, xRead, xWrite, xTruncate, xSync, xFileSize, xLock, xUnlock, xCheckReservedLock, xFileControl,
    xSectorSize, xDeviceCharacteristics, xShmMap, xShmLock, xShmBarrier, xShmUnmap, xFetch, xUnfetch,
};

static int xOpen(sqlite3_vfs *unused, sqlite3_filename name, sqlite3_file *f, int flags, int *outFlags) {
    (void)unused;
    RecFile *file = (RecFile *)f;
    memset(file, 0, sizeof(RecFile));
    file->real = (sqlite3_file *)&file[1];
    file->file = -1;
    int existed = name && access(name, F_OK) == 0;
    int rc = root->xOpen(root, name, file->real, flags, outFlags);
    if (file->real->pMethods) {
        file->base.pMethods = &methods;
        pthread_mutex_lock(&lock);
        if (logged(name)) {
            file->file = fileIndex(name);
            if (!existed && rc == SQLITE_OK) append(KBTD_REC_CREATE, file->file, 0, NULL, 0);
        }
        pthread_mutex_unlock(&lock);
    }
    return rc;
}

static int xDelete(sqlite3_vfs *v, const char *name, int syncDir) {
    (void)v;
    int rc = root->xDelete(root, name, syncDir);
    pthread_mutex_lock(&lock);
    if (rc == SQLITE_OK && logged(name)) append(KBTD_REC_DELETE, fileIndex(name), syncDir, NULL, 0);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int xAccess(sqlite3_vfs *v, const char *n, int fl, int *o) { (void)v; return root->xAccess(root, n, fl, o); }
static int xFullPathname(sqlite3_vfs *v, const char *n, int k, char *o) { (void)v; return root->xFullPathname(root, n, k, o); }
static void *xDlOpen(sqlite3_vfs *v, const char *n) { (void)v; return root->xDlOpen(root, n); }
static void xDlError(sqlite3_vfs *v, int n, char *o) { (void)v; root->xDlError(root, n, o); }
static void (*xDlSym(sqlite3_vfs *v, void *h, const char *s))(void) { (void)v; return root->xDlSym(root, h, s); }
static void xDlClose(sqlite3_vfs *v, void *h) { (void)v; root->xDlClose(root, h); }
static int xRandomness(sqlite3_vfs *v, int n, char *o) { (void)v; return root->xRandomness(root, n, o); }
static int xSleep(sqlite3_vfs *v, int us) { (void)v; return root->xSleep(root, us); }
static int xCurrentTime(sqlite3_vfs *v, double *o) { (void)v; return root->xCurrentTime(root, o); }
static int xGetLastError(sqlite3_vfs *v, int n, char *o) { (void)v; return root->xGetLastError(root, n, o); }
static int xCurrentTimeInt64(sqlite3_vfs *v, sqlite3_int64 *o) { (void)v; return root->xCurrentTimeInt64(root, o); }

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int registered = SQLITE_ERROR;

static void registerOnce(void) {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    root = sqlite3_vfs_find("unix");
    if (!root || root->iVersion < 2) return;
    vfs.iVersion = 2;
    vfs.szOsFile = (int)sizeof(RecFile) + root->szOsFile;
    vfs.mxPathname = root->mxPathname;
    vfs.zName = KBTD_RECORDING_VFS;
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
    registered = sqlite3_vfs_register(&vfs, 1);
}

int kbtd_recording_register(void) {
    pthread_once(&once, registerOnce);
    return registered;
}

void kbtd_recording_start(const char *directory) {
    pthread_mutex_lock(&lock);
    for (sqlite3_int64 i = 0; i < eventCount; i++) free((void *)events[i].bytes);
    eventCount = 0;
    for (int i = 0; i < nameCount; i++) free(names[i]);
    nameCount = 0;
    free(prefix);
    prefix = strdup(directory);
    pthread_mutex_unlock(&lock);
}

void kbtd_recording_stop(void) {
    pthread_mutex_lock(&lock);
    free(prefix);
    prefix = NULL;
    pthread_mutex_unlock(&lock);
}

sqlite3_int64 kbtd_recording_count(void) {
    pthread_mutex_lock(&lock);
    sqlite3_int64 count = eventCount;
    pthread_mutex_unlock(&lock);
    return count;
}

int kbtd_recording_event(sqlite3_int64 index, KbtdRecordedEvent *out) {
    pthread_mutex_lock(&lock);
    int found = index >= 0 && index < eventCount;
    if (found) *out = events[index];
    pthread_mutex_unlock(&lock);
    return found;
}

int kbtd_recording_files(void) {
    pthread_mutex_lock(&lock);
    int count = nameCount;
    pthread_mutex_unlock(&lock);
    return count;
}

const char *kbtd_recording_file_name(int file) {
    pthread_mutex_lock(&lock);
    const char *name = file >= 0 && file < nameCount ? names[file] : NULL;
    pthread_mutex_unlock(&lock);
    return name;
}

void kbtd_recording_note_sync(const char *path, sqlite3_int64 coveredBefore, int isDirectory) {
    pthread_mutex_lock(&lock);
    if (logged(path) || (isDirectory && prefix && strncmp(prefix, path, strlen(path)) == 0))
        append(isDirectory ? KBTD_REC_DIRSYNC : KBTD_REC_SYNC, fileIndex(path), coveredBefore, NULL, 0);
    pthread_mutex_unlock(&lock);
}

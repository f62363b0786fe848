#ifndef KBTD_RECORDING_VFS_H
#define KBTD_RECORDING_VFS_H
#include <sqlite3.h>

/// A test-only VFS over SQLite's "unix" VFS that logs, in memory and in order, what reaches the
/// disk's page cache and what makes it durable, for every file under one directory: each write
/// (offset and bytes), truncation, sync (and which earlier events it covers), creation and deletion.
/// The power-loss test rebuilds files from the log as a power cut would leave them.
#define KBTD_RECORDING_VFS "kbtd-recording"

enum KbtdRecordingKind {
    KBTD_REC_WRITE = 1,     // offset, length, bytes
    KBTD_REC_TRUNCATE = 2,  // offset: the new size
    KBTD_REC_SYNC = 3,      // offset: the events before this index are covered (the log's length when the sync began)
    KBTD_REC_CREATE = 4,    // the file was created by this open
    KBTD_REC_DELETE = 5,
    KBTD_REC_DIRSYNC = 6,   // the directory `file` names was synced; offset as for a sync
};

typedef struct KbtdRecordedEvent {
    int kind;
    int file;  // index into the file names
    sqlite3_int64 offset;
    int length;
    const unsigned char *bytes;  // valid until kbtd_recording_reset
} KbtdRecordedEvent;

/// Registers the VFS as the process's default (once), so every connection kbtd opens (the
/// writer's, the checkpointer's) goes through it. Turns SQLite's memory statistics off first, as
/// kbtd does before SQLite initialises. Returns SQLITE_OK or the registration's error.
int kbtd_recording_register(void);

/// Starts logging files whose path begins with `directory` (a copy is kept); clears the log.
void kbtd_recording_start(const char *directory);
/// Stops logging (files opened later are not logged); the log is kept until the next start.
void kbtd_recording_stop(void);

/// Events logged so far: the index the next event gets.
sqlite3_int64 kbtd_recording_count(void);
/// The event at `index` (0 ..< count); 0 if out of range.
int kbtd_recording_event(sqlite3_int64 index, KbtdRecordedEvent *out);
/// Files named by events (0 ..< files): their full paths.
int kbtd_recording_files(void);
const char *kbtd_recording_file_name(int file);

/// For a sync made outside SQLite (the writer's own fdatasync of the log, or of its directory):
/// call `kbtd_recording_count` before the sync, then this with that value once it succeeded.
void kbtd_recording_note_sync(const char *path, sqlite3_int64 coveredBefore, int isDirectory);
#endif

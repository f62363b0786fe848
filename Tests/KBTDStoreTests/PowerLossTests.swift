import CSQLite
import CSQLiteRecordingVFS
import Foundation
import KBTDCore
import KBTDStore
import Logging
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A power cut, simulated: the daemon's writer (group commits, `synchronous=NORMAL` with the log's
/// fsync on the sync thread, checkpoints on their own thread) stores one batch
/// per key while `CSQLiteRecordingVFS` logs every write, truncation and sync its files receive, and
/// the writer's own fdatasync of the log and of its directory are logged too. Then, for cut points
/// all along the log, the files are rebuilt as a power cut would leave them: the bytes of every
/// sync that finished before the cut, plus some, all, none or a torn part of the writes not synced
/// yet (the page cache may write back any of them, in any order, a sector at a time). Each rebuilt
/// database is opened with kbtd's normal code and must pass `integrity_check`, hold every batch
/// acknowledged before the cut, and hold each other batch whole or not at all.
///
/// Assumptions (docs/storage.md, "Power loss, tested"): the shared-memory file is lost (SQLite rebuilds
/// it); a sector (512 bytes) is written whole or not at all, as disks promise; a file created
/// through SQLite (the log) has a durable name once SQLite synced it (the unix VFS syncs the
/// directory at a new log's first sync) or once its directory was synced (`WALDurability`); the
/// database file itself exists (the test creates it before logging starts; kbtd syncs its
/// directory when it creates it).
///
/// To look at a rebuilt state: run the test alone (`KBTD_TEST_ALONE` set to its name, as
/// `AloneInAProcess` does) with `KBTD_POWER_DEBUG` set to a cut point (an event index, or `end`):
/// each state there is written to /tmp/kbtd-power-debug/N and the test stops.
@Suite("Power loss: every acknowledged batch survives a simulated power cut", .timeLimit(.minutes(15)))
struct PowerLossTests {
    static let name = "everyAcknowledgedBatchSurvivesAPowerCutAnywhere"

    @Test func everyAcknowledgedBatchSurvivesAPowerCutAnywhere() async throws {
        // The VFS must be the process's default, registered before SQLite is first used (it turns
        // SQLite's memory statistics off as kbtd does): a process of its own, where no other test opened SQLite first.
        guard AloneInAProcess.isThisProcess(for: Self.name) else {
            try await AloneInAProcess.run(Self.name, timeout: 840)
            return
        }
        try #require(kbtd_recording_register() == SQLITE_OK)
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kbtd.sqlite").path
        #expect(FileManager.default.createFile(atPath: path, contents: nil))

        let workload = try await Workload.run(path: path)
        let log = RecordedLog.read()
        let reference = try Contents(path: path)
        for (file, name) in log.names.enumerated() {
            let kinds = Dictionary(grouping: log.events.filter { $0.file == file }, by: \.kind).mapValues(\.count)
            print("power loss: \(name): \(kinds.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        }
        if let debug = ProcessInfo.processInfo.environment["KBTD_POWER_DEBUG"] {
            var replay = Replay(log: log)
            replay.advance(to: Int(debug) ?? log.events.count)
            for (n, variant) in replay.variants(seed: 1).enumerated() {
                let folder = URL(fileURLWithPath: "/tmp/kbtd-power-debug/\(n)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                for (name, bytes) in variant.files { try Data(bytes).write(to: folder.appendingPathComponent(name)) }
                print("power loss: \(folder.path): \(variant.name) \(variant.files.map { "\($0.0) \($0.1.count)" })")
            }
            return
        }
        #expect(reference.models.count == workload.acknowledged.count, "the uncut database holds every batch")
        #expect(log.syncs > 20 && log.walHeaderWrites >= 2,
                "the workload syncs often and the log starts over (\(log.syncs) syncs, \(log.walHeaderWrites) log headers)")

        // In memory where there is a tmpfs: some 1,750 states of up to 17 MB are written.
        let memory = FileManager.default.fileExists(atPath: "/dev/shm") ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory
        let rebuilt = memory.appendingPathComponent("kbtd-power-\(getpid())", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: rebuilt) }
        var replay = Replay(log: log)
        var checked = (cuts: 0, states: 0)
        for cut in log.cutPoints(acknowledgements: workload.acknowledged.map(\.logIndex)) {
            replay.advance(to: cut)
            let acknowledged = Set(workload.acknowledged.filter { $0.logIndex <= cut }.map(\.model))
            for variant in replay.variants(seed: UInt64(cut)) {
                try FileManager.default.createDirectory(at: rebuilt, withIntermediateDirectories: true)
                for (name, bytes) in variant.files {
                    try Data(bytes).write(to: rebuilt.appendingPathComponent(name))
                }
                let state = "cut at event \(cut) of \(log.events.count), \(variant.name)"
                let opened = rebuilt.appendingPathComponent("kbtd.sqlite").path
                do {
                    _ = try SQLiteTelemetryStore(path: opened)  // kbtd's own open: recovery, migrations, its index
                    let found = try Contents(path: opened)
                    #expect(found.integrity == "ok", "\(state): \(found.integrity)")
                    let missing = acknowledged.subtracting(found.models.keys)
                    #expect(missing.isEmpty, "\(state): acknowledged batches lost: \(missing.sorted().prefix(5))")
                    for (model, counts) in found.models where counts != reference.models[model] {
                        Issue.record("\(state): \(model) is partial: \(counts), whole: \(String(describing: reference.models[model]))")
                    }
                } catch {
                    Issue.record("\(state): the database does not open: \(error)")
                }
                try FileManager.default.removeItem(at: rebuilt)
                checked.states += 1
            }
            checked.cuts += 1
        }
        print("power loss: \(checked.cuts) cut points, \(checked.states) rebuilt states checked over \(log.events.count) logged events (\(log.syncs) syncs, \(log.walHeaderWrites) log headers); \(workload.acknowledged.count) batches in \(workload.commits) commits")
        #expect(checked.cuts >= 300)
    }
}

/// The daemon's writer storing one batch per key, some alone and some in group commits.
private struct Workload {
    struct Acknowledged {
        var model: String
        /// Events logged before the batch was answered.
        var logIndex: Int
    }

    var acknowledged: [Acknowledged]
    var commits: Int

    static func run(path: String) async throws -> Workload {
        let directory = (path as NSString).deletingLastPathComponent
        kbtd_recording_start(directory + "/")
        defer { kbtd_recording_stop() }
        // The daemon's store (StoreLocation.sqliteWriter) with the real fdatasync, logged.
        let commits = Mutex(0)
        let writer = GroupCommitWriter(openStore: { try SQLiteTelemetryStore(path: path, deferredSync: loggedFlush) },
                                       capacity: 4096, retention: 7 * 86_400, logger: Logger(label: "kbtd-test")) { _, _, _ in
            commits.withLock { $0 += 1 }
        }
        let answered = Mutex<[Acknowledged]>([])
        let now = Int64(Date().timeIntervalSince1970)
        let store: @Sendable (Int) async throws -> Void = { number in
            let model = "Model\(number)"
            let source: SourceID = number % 3 == 0 ? .trusted : SourceID(UInt64(number % 7 + 1))
            let heights = (0..<12).map { 300 + Double(($0 * 7 + number) % 40) }
            let outcome = try await writer.submit(pendingBatch("batch-\(number)", receivedAt: now + Int64(number),
                                                               model: model, heights: heights, source: source))
            #expect(outcome == .stored)
            let index = Int(kbtd_recording_count())
            answered.withLock { $0.append(Acknowledged(model: model, logIndex: index)) }
        }
        var number = 0
        while number < 640 {
            if number % 40 < 30 {
                number += 1
                try await store(number)  // alone: a commit of one batch
            } else {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for offset in 1...5 { group.addTask { [number] in try await store(number + offset) } }
                    try await group.waitForAll()
                }
                number += 5
            }
        }
        await writer.shutdown()
        return Workload(acknowledged: answered.withLock { $0 }, commits: commits.withLock { $0 })
    }

    /// `WALDurability.fdatasync`, logged: the events before the call are durable once it returned.
    static let loggedFlush: @Sendable (Int32) -> Int32 = { descriptor in
        var target = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/fd/\(descriptor)", &target, target.count - 1)
        var info = stat()
        let isDirectory = fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
        let before = kbtd_recording_count()
        let status = fdatasync(descriptor)
        if status == 0, length > 0 {
            target[length] = 0
            kbtd_recording_note_sync(target, before, isDirectory ? 1 : 0)
        }
        return status
    }
}

/// What a database holds per batch (each batch its own model): sample counts of every table a
/// batch adds to, and `integrity_check`'s verdict.
private struct Contents {
    struct Counts: Equatable, CustomStringConvertible {
        var batch: Int64, heights: Int64, animations: Int64, coldStarts: Int64, safeAreas: Int64, votes: Int64, keys: Int64
        var description: String { "batch \(batch) heights \(heights) animations \(animations) cold \(coldStarts) safe \(safeAreas) votes \(votes) keys \(keys)" }
    }

    var integrity = ""
    var models: [String: Counts] = [:]

    init(path: String) throws {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else {
            throw SQLiteFailure(message: "cannot open \(path)")
        }
        defer { sqlite3_close_v2(db) }
        integrity = try Self.rows(db, "PRAGMA integrity_check").map { $0[0] }.joined(separator: "; ")
        let perModel = """
            SELECT model, SUM(batch), SUM(heights), SUM(animations), SUM(cold), SUM(safe), SUM(votes), SUM(keys) FROM (
                SELECT model, accepted AS batch, 0 AS heights, 0 AS animations, 0 AS cold, 0 AS safe, 0 AS votes, 0 AS keys FROM batches
                UNION ALL SELECT model, 0, count, 0, 0, 0, 0, 0 FROM height_counts
                UNION ALL SELECT model, 0, 0, count, 0, 0, 0, 0 FROM animation_counts
                UNION ALL SELECT model, 0, 0, 0, count, 0, 0, 0 FROM cold_start_counts
                UNION ALL SELECT model, 0, 0, 0, 0, count, 0, 0 FROM safe_area_counts
                UNION ALL SELECT model, 0, 0, 0, 0, 0, votes, 0 FROM height_votes
                UNION ALL SELECT model, 0, 0, 0, 0, 0, 0, 1 FROM keys
            ) GROUP BY model
            """
        for row in try Self.rows(db, perModel) {
            let n = row.dropFirst().map { Int64($0) ?? -1 }
            models[row[0]] = Counts(batch: n[0], heights: n[1], animations: n[2], coldStarts: n[3], safeAreas: n[4], votes: n[5], keys: n[6])
        }
    }

    struct SQLiteFailure: Error { var message: String }

    static func rows(_ db: OpaquePointer, _ sql: String) throws -> [[String]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw SQLiteFailure(message: String(cString: sqlite3_errmsg(db)))
        }
        defer { sqlite3_finalize(statement) }
        var rows: [[String]] = []
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { return rows }
            guard status == SQLITE_ROW else { throw SQLiteFailure(message: String(cString: sqlite3_errmsg(db))) }
            rows.append((0..<sqlite3_column_count(statement)).map { sqlite3_column_text(statement, $0).map { String(cString: $0) } ?? "" })
        }
    }
}

/// The recording VFS's log, copied out.
private struct RecordedLog {
    enum Kind: Int32 { case write = 1, truncate, sync, create, delete, directorySync }
    struct Event {
        var kind: Kind
        var file: Int
        var offset: Int64
        var bytes: [UInt8]
    }

    var events: [Event] = []
    var names: [String] = []

    static func read() -> RecordedLog {
        var log = RecordedLog()
        let count = kbtd_recording_count()
        log.events.reserveCapacity(Int(count))
        for index in 0..<count {
            var event = KbtdRecordedEvent()
            guard kbtd_recording_event(index, &event) != 0, let kind = Kind(rawValue: event.kind) else { continue }
            let bytes = event.length > 0 ? Array(UnsafeBufferPointer(start: event.bytes, count: Int(event.length))) : []
            log.events.append(Event(kind: kind, file: Int(event.file), offset: event.offset, bytes: bytes))
        }
        log.names = (0..<kbtd_recording_files()).map { String(cString: kbtd_recording_file_name($0)) }
        return log
    }

    var syncs: Int { events.count { $0.kind == .sync } }

    /// Writes of a write-ahead-log header (offset 0 of the log): one each time the log starts over.
    var walHeaderWrites: Int { events.count { $0.kind == .write && $0.offset == 0 && names[$0.file].hasSuffix("-wal") } }

    /// Where to cut: just before and just after every sync and every log header, at every
    /// acknowledgement, and halfway between consecutive ones of those; at most ~420, evenly thinned.
    func cutPoints(acknowledgements: [Int]) -> [Int] {
        var marks = Set(acknowledgements)
        for (index, event) in events.enumerated() {
            switch event.kind {
            case .sync, .directorySync, .truncate, .delete: marks.formUnion([index, index + 1])
            case .write where event.offset == 0: marks.formUnion([index, index + 1])
            default: break
            }
        }
        marks.insert(events.count)
        let sorted = marks.filter { $0 <= events.count }.sorted()
        var all = sorted
        for (a, b) in zip(sorted, sorted.dropFirst()) where b - a > 1 { all.append((a + b) / 2) }
        all.sort()
        guard all.count > 420 else { return all }
        let step = Double(all.count) / 420
        return Set((0..<420).map { all[Int(Double($0) * step)] } + [events.count]).sorted()
    }
}

/// Files as a power cut would leave them, moving forward through the log.
private struct Replay {
    enum Op {
        case write(Int64, [UInt8]), truncate(Int64), create, delete
    }

    struct FileState {
        var exists = false
        var bytes: [UInt8] = []
        /// Logged, not yet durable: (event index, what).
        var pending: [(index: Int, op: Op)] = []
    }

    let log: RecordedLog
    var files: [Int: FileState] = [:]
    var position = 0

    init(log: RecordedLog) {
        self.log = log
        // The database file was created before logging began (and its directory synced).
        for (file, name) in log.names.enumerated() where name.hasSuffix("/kbtd.sqlite") { files[file] = FileState(exists: true) }
    }

    /// Applies the events before `cut`: a sync makes the ops it covers durable.
    mutating func advance(to cut: Int) {
        while position < cut {
            let event = log.events[position]
            switch event.kind {
            case .write: files[event.file, default: FileState()].pending.append((position, .write(event.offset, event.bytes)))
            case .truncate: files[event.file, default: FileState()].pending.append((position, .truncate(event.offset)))
            case .create:
                files[event.file, default: FileState()].pending.append((position, .create))
                unsyncedSinceCreated.insert(event.file)
            case .delete: files[event.file, default: FileState()].pending.append((position, .delete))
            case .sync:
                var state = files[event.file, default: FileState()]
                let covered = state.pending.prefix { $0.index < Int(event.offset) }
                for (_, op) in covered { Self.apply(op, to: &state) }
                state.pending.removeFirst(covered.count)
                files[event.file] = state
                // SQLite's unix VFS syncs the directory too at the first sync of a journal or log it created.
                if unsyncedSinceCreated.remove(event.file) != nil {
                    syncNames(in: (log.names[event.file] as NSString).deletingLastPathComponent, before: Int(event.offset))
                }
            case .directorySync:
                syncNames(in: log.names[event.file], before: Int(event.offset))
            }
            position += 1
        }
    }

    /// Files created in the log (the journal, the log) whose first sync has not happened yet.
    var unsyncedSinceCreated: Set<Int> = []

    /// A directory's sync: the creations and deletions of its files logged before `before` are
    /// durable (a file's pending writes from before its last such change belonged to an older file).
    mutating func syncNames(in directory: String, before: Int) {
        for (file, name) in log.names.enumerated() where (name as NSString).deletingLastPathComponent == directory {
            guard var state = files[file],
                  let last = state.pending.lastIndex(where: {
                      guard $0.index < before else { return false }
                      switch $0.op { case .create, .delete: return true; default: return false }
                  }) else { continue }
            Self.apply(state.pending[last].op, to: &state)
            if case .create = state.pending[last].op { state.bytes = [] }
            state.pending.removeFirst(last + 1)
            files[file] = state
        }
    }

    static func apply(_ op: Op, to state: inout FileState) {
        switch op {
        case .create:
            if !state.exists { state.bytes = [] }
            state.exists = true
        case .delete:
            state.exists = false
            state.bytes = []
        case .truncate(let size):
            guard state.exists else { return }
            if Int(size) < state.bytes.count { state.bytes.removeLast(state.bytes.count - Int(size)) }
            else { state.bytes += [UInt8](repeating: 0, count: Int(size) - state.bytes.count) }
        case .write(let offset, let data):
            guard state.exists else { return }  // the page cache's copy of a file whose name never reached the disk
            let end = Int(offset) + data.count
            if state.bytes.count < end { state.bytes += [UInt8](repeating: 0, count: end - state.bytes.count) }
            state.bytes.replaceSubrange(Int(offset)..<end, with: data)
        }
    }

    struct Variant {
        var name: String
        var files: [(String, [UInt8])]
    }

    /// The states a cut here can leave: no unsynced write reached the disk; all did; the first half
    /// did; a random half did (any order); all did but the last, torn at a sector boundary; all did
    /// but the last, of which every other sector reached the disk.
    func variants(seed: UInt64) -> [Variant] {
        let pending = files.flatMap { file, state in state.pending.map { (file: file, index: $0.index, op: $0.op) } }
            .sorted { $0.index < $1.index }
        /// `choose`: the part of each unsynced op that reached the disk.
        func build(_ name: String, _ choose: (Int, Op) -> [Op]) -> Variant {
            var states = files
            for item in pending {
                for op in choose(item.index, item.op) { Self.apply(op, to: &states[item.file]!) }
            }
            let present = states.compactMap { file, state -> (String, [UInt8])? in
                state.exists ? ((log.names[file] as NSString).lastPathComponent, state.bytes) : nil
            }
            return Variant(name: name, files: present)
        }
        var variants = [build("synced data only") { _, _ in [] }]
        guard let last = pending.last else { return variants }
        variants.append(build("every unsynced write") { _, op in [op] })
        let half = pending[pending.count / 2].index
        if pending.count > 1 { variants.append(build("the first half of the unsynced writes") { index, op in index < half ? [op] : [] }) }
        var random = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        if pending.count > 2 {
            variants.append(build("a random half of the unsynced writes") { _, op in
                random ^= random << 13; random ^= random >> 7; random ^= random << 17
                return random & 1 == 0 ? [op] : []
            })
        }
        if case .write(let offset, let data) = last.op, data.count > 512 {
            let sector = data.count / 2 / 512 * 512
            variants.append(build("the last unsynced write torn after \(sector) bytes") { index, op in
                index == last.index ? [.write(offset, Array(data[..<max(sector, 512)]))] : [op]
            })
            variants.append(build("every other sector of the last unsynced write") { index, op in
                guard index == last.index else { return [op] }
                return stride(from: 0, to: data.count, by: 1_024).map { .write(offset + Int64($0), Array(data[$0..<min($0 + 512, data.count)])) }
            })
        }
        return variants
    }
}

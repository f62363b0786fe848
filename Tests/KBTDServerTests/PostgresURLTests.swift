import Foundation
import KBTDPostgres
import KBTDServer
import Testing

@Suite("PostgreSQL URLs and settings")
struct PostgresURLTests {
    @Test func theDocumentedFormsParse() throws {
        let tcp = try PostgresURL("postgres://kbtd:p%40ss@db.internal:6432/telemetry?sslmode=require")
        #expect(tcp.user == "kbtd")
        #expect(tcp.password == "p@ss")
        #expect(tcp.host == "db.internal")
        #expect(tcp.port == 6432)
        #expect(tcp.database == "telemetry")
        #expect(tcp.sslMode == .require)
        #expect(tcp.socketDirectory == nil)

        let socket = try PostgresURL("postgresql://kbtd@/kbtd?host=/var/run/postgresql")
        #expect(socket.socketDirectory == "/var/run/postgresql")
        #expect(socket.port == 5432)
        #expect(socket.password == nil)
        #expect(socket.description == "postgres://kbtd@localhost:5432/kbtd?host=/var/run/postgresql")

        let v6 = try PostgresURL("postgres://kbtd@[::1]:5433/kbtd")
        #expect(v6.host == "::1")
        #expect(v6.port == 5433)
        #expect(v6.description == "postgres://kbtd@[::1]:5433/kbtd")
        #expect(PostgresURL.isURL("POSTGRES://x@y/z"))
        #expect(!PostgresURL.isURL("/var/lib/kbtd/kbtd.sqlite"))
    }

    @Test func aBadURLNamesThePartAndNeverThePassword() {
        for (text, part) in [("postgres://kbtd:hunter2@db:99999/kbtd", "port"), ("postgres://kbtd:hunter2@db/", "database name"),
                             ("postgres://:hunter2@db/kbtd", "user"), ("postgres://kbtd:hunter2@db/kbtd?sslmode=maybe", "sslmode"),
                             ("postgres://kbtd:hunter2@db/kbtd?colour=red", "colour")] {
            #expect {
                try PostgresURL(text)
            } throws: { error in
                let message = "\(error)"
                return message.hasPrefix(part) && !message.contains("hunter2")
            }
        }
        #expect(throws: SettingsError.self) {
            try SettingsLoader.load(configFile: nil, environment: ["KBTD_DATABASE": "postgres://kbtd:hunter2@db:0/kbtd"], flags: [:])
        }
        do {
            _ = try SettingsLoader.load(configFile: nil, environment: [:], flags: ["database": "postgres://kbtd:hunter2@db/"])
            Issue.record("a URL without a database name was accepted")
        } catch {
            #expect(error.message.contains("flag --database"))
            #expect(!error.message.contains("hunter2"))
        }
    }

    @Test func thePasswordComesFromTheEnvironmentOrAFileWhenTheURLHasNone() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("password").path
        try "from-file\nignored\n".write(toFile: file, atomically: true, encoding: .utf8)

        var url = try PostgresURL("postgres://kbtd@db/kbtd")
        try url.resolvePassword(environment: ["KBTD_DATABASE_PASSWORD": "from-env", "KBTD_DATABASE_PASSWORD_FILE": file])
        #expect(url.password == "from-env")
        url = try PostgresURL("postgres://kbtd@db/kbtd")
        try url.resolvePassword(environment: [:], passwordFile: file)
        #expect(url.password == "from-file")
        url = try PostgresURL("postgres://kbtd:in-url@db/kbtd")
        try url.resolvePassword(environment: ["KBTD_DATABASE_PASSWORD": "from-env"])
        #expect(url.password == "in-url")
        #expect(!url.description.contains("in-url"))
        url = try PostgresURL("postgres://kbtd@db/kbtd")
        #expect(throws: PostgresURL.Problem.self) {
            try url.resolvePassword(environment: ["KBTD_DATABASE_PASSWORD_FILE": directory.appendingPathComponent("missing").path])
        }

        let settings = try SettingsLoader.load(
            configFile: nil, environment: ["KBTD_INDEX_CATCH_UP_SECONDS": "0.25", "KBTD_DATABASE_POOL_SIZE": "8"], flags: [:])
        #expect(settings.postgres.indexCatchUpSeconds == 0.25)
        #expect(settings.postgres.poolSize == 8)
        #expect(throws: SettingsError.self) {
            try SettingsLoader.load(configFile: nil, environment: ["KBTD_DATABASE_POOL_SIZE": "1"], flags: [:])
        }
    }
}

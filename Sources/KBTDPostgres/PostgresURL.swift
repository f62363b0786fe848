import Foundation
import PostgresNIO

/// A parsed `postgres://` (or `postgresql://`) database URL:
/// `postgres://user[:password]@host[:port]/dbname[?host=/socket/dir][&port=N][&sslmode=disable|prefer|require][&application_name=X]`.
///
/// The `host=` query parameter (as libpq reads it) names a Unix socket
/// directory; the socket file inside is `.s.PGSQL.<port>`. The password may
/// also come from `KBTD_DATABASE_PASSWORD` or a file (`KBTD_DATABASE_PASSWORD_FILE`);
/// `description` never shows it.
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    public var user: String
    public var password: String?
    public var host: String
    public var port: Int
    public var database: String
    /// Unix socket directory (`?host=/dir`, or a host part starting with `/` after percent-decoding).
    public var socketDirectory: String?
    public var sslMode: SSLMode
    public var applicationName: String?

    public enum SSLMode: String, Sendable { case disable, prefer, require }

    /// Why a URL was refused: the message names the part at fault, never the password.
    public struct Problem: Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    /// Whether `text` is a PostgreSQL URL rather than an SQLite file path.
    public static func isURL(_ text: String) -> Bool {
        let lower = text.lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    public init(_ text: String) throws(Problem) {
        guard Self.isURL(text) else { throw Problem(description: "must start with postgres:// or postgresql://") }
        let rest = text[text.index(after: text.firstIndex(of: ":")!)...].dropFirst(2)
        var (authority, pathAndQuery) = (Substring(rest), Substring(""))
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            pathAndQuery = rest[rest.index(after: slash)...]
        } else if let question = rest.firstIndex(of: "?") {
            authority = rest[..<question]
            pathAndQuery = rest[question...]
        }
        var userInfo: Substring = ""
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            userInfo = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
        }
        var user = "", password: String?
        if let colon = userInfo.firstIndex(of: ":") {
            user = try Self.decode(userInfo[..<colon], part: "user")
            password = try Self.decode(userInfo[userInfo.index(after: colon)...], part: "password")
        } else {
            user = try Self.decode(userInfo, part: "user")
        }
        var host = "", port = 5432
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw Problem(description: "host: unterminated [IPv6] address") }
            host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") { port = try Self.port(after.dropFirst()) }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = try Self.decode(hostPort[..<colon], part: "host")
            port = try Self.port(hostPort[hostPort.index(after: colon)...])
        } else {
            host = try Self.decode(hostPort, part: "host")
        }
        var database = "", query: Substring = ""
        if let question = pathAndQuery.firstIndex(of: "?") {
            database = try Self.decode(pathAndQuery[..<question], part: "database name")
            query = pathAndQuery[pathAndQuery.index(after: question)...]
        } else {
            database = try Self.decode(pathAndQuery, part: "database name")
        }
        var socketDirectory: String? = host.hasPrefix("/") ? host : nil
        var sslMode = SSLMode.prefer
        var applicationName: String?
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            let value = try Self.decode(parts.count > 1 ? parts[1] : "", part: name)
            switch name {
            case "host":
                if value.hasPrefix("/") { socketDirectory = value } else { host = value }
            case "port": port = try Self.port(Substring(value))
            case "user": user = value
            case "password": password = value
            case "dbname": database = value
            case "sslmode":
                switch value {
                case "disable", "allow": sslMode = .disable
                case "prefer": sslMode = .prefer
                case "require", "verify-ca", "verify-full": sslMode = .require
                default: throw Problem(description: "sslmode: must be disable, prefer or require (got \(value))")
                }
            case "application_name": applicationName = value
            case "connect_timeout", "options", "target_session_attrs": continue
            default: throw Problem(description: "\(name): unknown parameter (known: host, port, user, password, dbname, sslmode, application_name)")
            }
        }
        if host.isEmpty { host = "localhost" }
        guard !user.isEmpty else { throw Problem(description: "user: missing (postgres://USER@host/dbname)") }
        guard !database.isEmpty else { throw Problem(description: "database name: missing (postgres://user@host/DBNAME)") }
        self.user = user
        self.password = password
        self.host = host
        self.port = port
        self.database = database
        self.socketDirectory = socketDirectory
        self.sslMode = sslMode
        self.applicationName = applicationName
    }

    /// The URL without its password: what logs and errors show.
    public var description: String {
        var text = "postgres://\(user)@"
        text += host.contains(":") ? "[\(host)]" : host
        text += ":\(port)/\(database)"
        if let socketDirectory { text += "?host=\(socketDirectory)" }
        return text
    }

    /// postgres-nio's configuration: the Unix socket when one is named, else TCP.
    public func configuration() -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let socketDirectory {
            configuration = .init(unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: user, password: password,
                                  database: database)
        } else {
            let tls: PostgresClient.Configuration.TLS = switch sslMode {
            case .disable: .disable
            case .prefer: .prefer(.makeClientConfiguration())
            case .require: .require(.makeClientConfiguration())
            }
            configuration = .init(host: host, port: port, username: user, password: password, database: database, tls: tls)
        }
        configuration.options.additionalStartupParameters = [("application_name", applicationName ?? "kbtd")]
        return configuration
    }

    /// Fills in the password from the environment when the URL has none:
    /// `KBTD_DATABASE_PASSWORD`, else the first line of the file `KBTD_DATABASE_PASSWORD_FILE`
    /// (or `passwordFile`, from the configuration) names.
    public mutating func resolvePassword(environment: [String: String] = ProcessInfo.processInfo.environment,
                                         passwordFile: String? = nil) throws(Problem) {
        guard password == nil else { return }
        if let value = environment["KBTD_DATABASE_PASSWORD"], !value.isEmpty {
            password = value
            return
        }
        guard let file = environment["KBTD_DATABASE_PASSWORD_FILE"] ?? passwordFile else { return }
        guard let contents = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw Problem(description: "database password file \(file): cannot be read")
        }
        password = String(contents.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
    }

    private static func decode(_ part: Substring, part name: String) throws(Problem) -> String {
        guard let decoded = String(part).removingPercentEncoding else {
            throw Problem(description: "\(name): invalid percent-encoding")
        }
        return decoded
    }

    private static func port(_ text: Substring) throws(Problem) -> Int {
        guard let port = Int(text), (1...65535).contains(port) else {
            throw Problem(description: "port: must be an integer in 1...65535 (got \(text))")
        }
        return port
    }
}

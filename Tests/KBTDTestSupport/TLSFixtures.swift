import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway certificate authority and a server certificate for 127.0.0.1
/// and localhost it signed, made with the openssl command line in `directory`.
package struct TestCertificates {
    /// The CA certificate clients trust (`curl --cacert`).
    package let ca: String
    /// The server's chain: its certificate, then the CA's (a chain file, as certbot's fullchain.pem).
    package let chain: String
    package let key: String

    /// `keyType`: `ec` (P-256) or `rsa` (2048 bits), so both ECDHE-ECDSA and ECDHE-RSA suites get exercised.
    package static func make(in directory: URL, name: String, keyType: String = "ec") throws -> TestCertificates {
        let base = directory.appendingPathComponent(name).path
        let keyOptions = keyType == "ec" ? ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"] : ["-newkey", "rsa:2048"]
        let extensions = base + "-ext.cnf"
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            .write(toFile: extensions, atomically: true, encoding: .utf8)
        try openssl(["req", "-x509", "-nodes", "-days", "2", "-subj", "/CN=kbtd test CA \(name)",
                     "-keyout", base + "-ca.key", "-out", base + "-ca.pem"] + keyOptions)
        try openssl(["req", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", base + ".key", "-out", base + ".csr"] + keyOptions)
        try openssl(["x509", "-req", "-in", base + ".csr", "-CA", base + "-ca.pem", "-CAkey", base + "-ca.key",
                     "-CAcreateserial", "-days", "2", "-extfile", extensions, "-out", base + "-leaf.pem"])
        let leaf = try String(contentsOfFile: base + "-leaf.pem", encoding: .utf8)
        let ca = try String(contentsOfFile: base + "-ca.pem", encoding: .utf8)
        try (leaf + ca).write(toFile: base + "-chain.pem", atomically: true, encoding: .utf8)
        return TestCertificates(ca: base + "-ca.pem", chain: base + "-chain.pem", key: base + ".key")
    }

    private static func openssl(_ arguments: [String]) throws {
        let result = try spawnAndWait("/usr/bin/openssl", arguments, timeout: 60)
        guard result.status == 0 else {
            throw HTTPTestError(description: "openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(result.status) \(result.stderr)")
        }
    }
}

/// `curl` with arguments; returns its exit status, stdout (the body and any `-w` text) and stderr.
package func curl(_ arguments: [String]) throws -> CommandResult {
    try spawnAndWait("/usr/bin/curl", ["-sS", "--max-time", "20"] + arguments, timeout: 60)
}

/// The release this kbtd is: `scripts/release VERSION` sets it (CHANGELOG.md has its section).
let kbtdVersion = "0.1.0"

/// The commit kbtd was built from, written into this file at build time without a build plugin:
/// `git archive` substitutes it (`export-subst` in .gitattributes), so a source tarball carries it;
/// `scripts/package` writes it before its build and puts the line back after. Any other build of
/// a clone says "unknown".
let buildCommitStamp = "$Format:%h$"

/// The commit, or "unknown" when the stamp was not substituted.
var buildCommit: String {
    buildCommitStamp.isEmpty || buildCommitStamp.hasPrefix("$Format") ? "unknown" : buildCommitStamp
}

/// What `kbtd --version` prints and the start-up log line names: `0.1.0 (abc1234)`.
var kbtdVersionLine: String { "\(kbtdVersion) (\(buildCommit))" }

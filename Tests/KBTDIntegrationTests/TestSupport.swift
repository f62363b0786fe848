// The shared helpers (Tests/KBTDTestSupport: the daemon, PostgreSQL, nginx, waits, batches)
// and, through them, KBTDReference's JSON parser, for every file of this test target.
@_exported import KBTDTestSupport

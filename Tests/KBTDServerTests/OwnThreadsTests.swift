import Testing

/// `.ownThreads` must move a test off the cooperative pool, whether the test is
/// synchronous or async, and its child tasks with it.
@Suite("Tests that block run on threads of their own", .ownThreads, .timeLimit(.minutes(10)))
struct OwnThreadsTests {
    @Test func aSynchronousTestRunsOnAnOwnThread() {
        #expect(BlockingTestExecutor.isCurrentThreadOwn)
    }

    @Test func anAsyncTestAndItsChildTasksRunOnOwnThreads() async {
        #expect(BlockingTestExecutor.isCurrentThreadOwn)
        let children = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 { group.addTask { BlockingTestExecutor.isCurrentThreadOwn } }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(children == [true, true, true, true])
    }
}

@Suite("Tests without the trait stay on the cooperative pool")
struct PoolThreadsTests {
    @Test func aTestWithoutTheTraitIsNotMoved() async {
        #expect(!BlockingTestExecutor.isCurrentThreadOwn)
    }
}

/// The rule `.ownThreads` enforces: its tests take a time limit of 10 minutes or none, since the
/// limit counts the wait for a turn (`OwnThreadsTrait.prepare(for:)` refuses a shorter one).
@Suite("An .ownThreads test refuses a time limit under 10 minutes")
struct OwnThreadsTimeLimitTests {
    @Test func aLimitUnderTenMinutesIsRefusedAndTenOrNoneIsTaken() throws {
        #expect(throws: OwnThreadsTrait.TimeLimitTooShort.self) { try OwnThreadsTrait.check(timeLimit: .seconds(120)) }
        #expect(throws: OwnThreadsTrait.TimeLimitTooShort.self) { try OwnThreadsTrait.check(timeLimit: .seconds(599)) }
        try OwnThreadsTrait.check(timeLimit: .seconds(600))
        try OwnThreadsTrait.check(timeLimit: .seconds(1800))
        try OwnThreadsTrait.check(timeLimit: nil)
    }

    /// What the check reads: a test's `timeLimit` holds its suite's (the case that failed a parallel
    /// run was a test-level `.ownThreads` inside a 2-minute suite).
    @Suite("A suite's time limit", .timeLimit(.minutes(2)))
    struct Inherited {
        @Test func reachesItsTests() {
            #expect(Test.current?.timeLimit == .seconds(120))
        }
    }
}

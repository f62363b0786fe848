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

import NIOCore

/// An event loop as a `TaskExecutor`: a task that prefers it runs its nonisolated code on the loop's
/// thread, starts there, and resumes there whichever thread resumes it (the group-commit writer's,
/// or any other). The h2 batch path runs a batch's intake and commit in such a task
/// (`HTTP2FrameFront`), so a batch needs no cooperative-pool thread: the event loop reads it,
/// counts it and submits it, and the commit's completion wakes that loop alone, which writes the
/// answer in the same turn. SwiftNIO 2.101's loops are `SerialExecutor`s, not `TaskExecutor`s.
///
///     let executor = EventLoopTaskExecutor(context.eventLoop)
///     Task(executorPreference: executor) { promise.succeed(await ingest.ingest(...)) }
///
/// A job runs as the task executor's (`runSynchronously(on:)`), not the loop's serial executor's:
/// run as the latter, a nonisolated function's hop to the generic executor would enqueue it again.
final class EventLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // From the loop's own thread `execute` queues the job for this turn's tasks; from another
        // thread it also wakes the loop.
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

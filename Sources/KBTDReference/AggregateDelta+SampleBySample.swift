import KBTDCore

extension AggregateDelta {
    /// The counts of `batch` added one sample at a time (the reference for `init(batch:)`).
    public static func sampleBySample(_ batch: ValidatedBatch) -> AggregateDelta {
        var delta = AggregateDelta()
        for sample in batch.samples {
            delta.add(sample, device: batch.device)
        }
        if let screen = batch.device.screen, !batch.samples.isEmpty {
            delta.screens[ModelScreenKey(model: batch.device.model, screen: screen), default: 0] += 1
        }
        return delta
    }
}

//! The worker flow end to end against real servers: acquire a lease with a
//! fence, run the job under renewal, write through the fenced store, record
//! completion, release. Run it with the throwaway servers up:
//!
//! ```sh
//! scripts/with-services cargo run -p redfence-core --example process
//! ```

use std::sync::Arc;

use redfence_core::{
    FencedStore, JobId, LockClient, LockConfig, PgFencedStore, ProcessOutcome, ResourceName, Worker,
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let redis_url = std::env::var("REDFENCE_REDIS_URL")
        .map_err(|_| "REDFENCE_REDIS_URL is not set: run under scripts/with-services")?;
    let database_url = std::env::var("REDFENCE_DATABASE_URL")
        .map_err(|_| "REDFENCE_DATABASE_URL is not set: run under scripts/with-services")?;

    let redis = redis::Client::open(redis_url)?
        .get_connection_manager()
        .await?;
    let store = PgFencedStore::connect(&database_url).await?;
    let resource = ResourceName::new("invoice-42")?.with_type("invoice")?;
    store.ensure_resource(&resource).await?;

    let config = LockConfig::builder().lease_ms(10_000).build()?;
    let worker = Worker::new(LockClient::new(redis, config)?, Arc::new(store.clone()));
    let job = JobId::new(format!("job-{}", uuid::Uuid::new_v4()))?;

    for delivery in ["first delivery", "redelivery"] {
        let outcome = worker
            .process(&resource, &job, |fence| async move {
                Ok(format!("total recomputed under fence {fence}"))
            })
            .await;
        println!("{delivery}: {}", outcome.name());
        if let ProcessOutcome::Failed(cause) = outcome {
            return Err(cause.into());
        }
    }
    let (value, fence) = store.read(&resource).await?.ok_or("resource vanished")?;
    println!("stored: {value:?} (last fence {fence})");
    Ok(())
}

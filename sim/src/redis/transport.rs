//! The networks an instance can live on — turmoil's simulated TCP or real
//! TCP — and the byte streams it speaks RESP over.

use tokio::io::{AsyncRead, AsyncWrite};

/// A byte stream the server can speak RESP over.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> Io for T {}

/// Which network the instance lives on (replicas connect through it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transport {
    /// turmoil's simulated TCP.
    Turmoil,
    /// Real TCP via tokio.
    Tokio,
}

impl Transport {
    /// Opens a connection to `host:port`.
    pub(crate) async fn connect(self, host: &str, port: u16) -> std::io::Result<Box<dyn Io>> {
        match self {
            Transport::Turmoil => {
                let stream = turmoil::net::TcpStream::connect((host, port)).await?;
                Ok(Box::new(stream))
            }
            Transport::Tokio => {
                let stream = tokio::net::TcpStream::connect((host, port)).await?;
                stream.set_nodelay(true)?;
                Ok(Box::new(stream))
            }
        }
    }
}

//! Execution worlds: where the files are and where processes run, reached over JSON-RPC.
//!
//! `toolhost exec-server` serves a world rooted at a folder ([`serve`]): every path a client
//! sends is resolved on the server, beneath the root handle it holds, with the same confinement
//! the local file tools have — a remote world never trusts the client's checks. [`WorldClient`]
//! is the other end: it starts the server as a child (directly, over `ssh`, in a container),
//! says hello, and reconnects on the next request after the connection dropped. The messages
//! are in `toolhost_protocol::world`; docs/design.md ("Execution worlds") has the plan this is
//! the first part of.

mod client;
mod error;
mod handlers;
mod launch;
mod processes;
mod provision;
mod pty;
mod remote_world;
mod run;
mod serve;
mod websocket;

pub use client::{ProcessEvent, RemoteProcess, Traffic, WorldClient, bytes_of};
pub use error::WorldError;
pub use handlers::World;
pub use launch::{
    CONTAINER_ROOT, ContainerSpec, Launch, Provision, REMOTE_CACHE, binary_tag, container_engine,
};
pub use remote_world::RemoteWorld;
pub use serve::{MAX_MESSAGE_BYTES, serve};
pub use websocket::{WebsocketError, bridge, listen};

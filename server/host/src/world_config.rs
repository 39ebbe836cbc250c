//! `[world]` (docs/configuration.md): where the tools' files and processes are — this machine
//! (`local`, the default), a host over ssh, or a container. It starts programs (ssh, podman), so
//! only the user config or a trusted workspace may set it.

use std::path::Path;
use std::sync::Arc;

use toolhost_contract::config::{Dropped, Layer, Section};
use toolhost_world::{ContainerSpec, Launch, RemoteWorld, WorldClient};

/// Which execution world.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorldKind {
    #[default]
    Local,
    Ssh,
    Container,
    /// An exec-server already listening on a loopback websocket.
    Websocket,
}

/// `[world]` as applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorldSettings {
    pub kind: WorldKind,
    /// ssh: the host (`user@box`, or a name from the ssh config).
    pub host: Option<String>,
    /// ssh: the folder on the host the world serves.
    pub root: Option<String>,
    /// ssh: options before the host (`-i`, `-F`, `-o Port=…`).
    pub ssh_options: Vec<String>,
    /// ssh: toolhost on the host; when absent this toolhost is copied there on first use.
    pub program: Option<String>,
    /// container: the image.
    pub image: Option<String>,
    /// container: `podman` or `docker` (default: whichever is installed, podman first).
    pub engine: Option<String>,
    /// container: more `run` options.
    pub container_options: Vec<String>,
    /// websocket: the exec-server's URL (`ws://127.0.0.1:<port>`).
    pub url: Option<String>,
    /// websocket: the file the exec-server wrote its token to.
    pub token_file: Option<String>,
}

impl WorldSettings {
    /// How to start the world's exec-server for the workspace at `root` (the local folder a
    /// container mounts); `Err` names what the section lacks.
    pub fn launch(&self, root: &Path) -> Result<Launch, String> {
        let this =
            std::env::current_exe().map_err(|e| format!("cannot locate this toolhost: {e}"))?;
        match self.kind {
            WorldKind::Local => Ok(Launch::local(&this, root)),
            WorldKind::Ssh => {
                let (Some(host), Some(remote_root)) = (&self.host, &self.root) else {
                    return Err("[world] kind = \"ssh\" needs host and root".to_owned());
                };
                match &self.program {
                    Some(program) => Ok(Launch::ssh(host, remote_root, program, &self.ssh_options)),
                    None => {
                        Launch::ssh_provisioned(host, remote_root, &this, &self.ssh_options, None)
                            .map_err(|e| format!("cannot read {}: {e}", this.display()))
                    }
                }
            }
            WorldKind::Websocket => {
                let (Some(url), Some(token_file)) = (&self.url, &self.token_file) else {
                    return Err("[world] kind = \"websocket\" needs url and token_file".to_owned());
                };
                Ok(Launch::websocket(&this, url, Path::new(token_file)))
            }
            WorldKind::Container => {
                let Some(image) = &self.image else {
                    return Err("[world] kind = \"container\" needs image".to_owned());
                };
                let engine = match &self.engine {
                    Some(engine) => engine.clone(),
                    None => toolhost_world::container_engine()
                        .ok_or("neither podman nor docker is installed")?
                        .to_owned(),
                };
                Ok(Launch::container(&ContainerSpec {
                    engine,
                    image: image.clone(),
                    workspace: root.to_path_buf(),
                    binary: this,
                    name: format!("toolhost-world-{}-{}", std::process::id(), next_container()),
                    options: self.container_options.clone(),
                }))
            }
        }
    }

    /// How messages name the world (`ssh box:/srv/repo`, `container debian:12`).
    pub fn describe(&self) -> String {
        match self.kind {
            WorldKind::Local => "local".to_owned(),
            WorldKind::Ssh => format!(
                "ssh {}:{}",
                self.host.as_deref().unwrap_or("?"),
                self.root.as_deref().unwrap_or("?")
            ),
            WorldKind::Container => {
                format!("container {}", self.image.as_deref().unwrap_or("?"))
            }
            WorldKind::Websocket => format!("websocket {}", self.url.as_deref().unwrap_or("?")),
        }
    }

    /// The world the tools of a workspace at `root` use: `None` for this machine. Nothing is
    /// started yet; the first call that needs the world connects.
    pub fn open(&self, root: &Path) -> Result<Option<Arc<RemoteWorld>>, String> {
        if self.kind == WorldKind::Local {
            return Ok(None);
        }
        let client = Arc::new(WorldClient::new(self.launch(root)?));
        Ok(Some(Arc::new(RemoteWorld::new(client, self.describe()))))
    }
}

/// Containers of one process get names of their own (a process may host several sessions).
fn next_container() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// `[world]` as one source gives it.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorldSection {
    kind: Option<WorldKind>,
    host: Option<String>,
    root: Option<String>,
    ssh_options: Option<Vec<String>>,
    program: Option<String>,
    image: Option<String>,
    engine: Option<String>,
    container_options: Option<Vec<String>>,
    url: Option<String>,
    token_file: Option<String>,
}

impl Section for WorldSection {
    type Settings = WorldSettings;

    fn apply(self, settings: &mut WorldSettings, _layer: &mut Layer<'_>) {
        if let Some(kind) = self.kind {
            settings.kind = kind;
        }
        let keep = |new: Option<String>, old: &mut Option<String>| {
            if new.is_some() {
                *old = new;
            }
        };
        keep(self.host, &mut settings.host);
        keep(self.root, &mut settings.root);
        keep(self.program, &mut settings.program);
        keep(self.image, &mut settings.image);
        keep(self.engine, &mut settings.engine);
        keep(self.url, &mut settings.url);
        keep(self.token_file, &mut settings.token_file);
        if let Some(options) = self.ssh_options {
            settings.ssh_options = options;
        }
        if let Some(options) = self.container_options {
            settings.container_options = options;
        }
    }

    fn restrict_untrusted(&mut self, _applied: &WorldSettings) -> Vec<String> {
        let mut dropped = Dropped::new();
        dropped.always("world.kind", &mut self.kind);
        dropped.always("world.host", &mut self.host);
        dropped.always("world.root", &mut self.root);
        dropped.always("world.ssh_options", &mut self.ssh_options);
        dropped.always("world.program", &mut self.program);
        dropped.always("world.image", &mut self.image);
        dropped.always("world.engine", &mut self.engine);
        dropped.always("world.container_options", &mut self.container_options);
        dropped.always("world.url", &mut self.url);
        dropped.always("world.token_file", &mut self.token_file);
        dropped.group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untrusted_source_cannot_choose_a_world() {
        let mut section: WorldSection = toml::from_str(
            "kind = \"ssh\"\nhost = \"evil\"\nssh_options = [\"-oProxyCommand=x\"]\n",
        )
        .expect("parses");
        let dropped = section.restrict_untrusted(&WorldSettings::default());
        assert_eq!(dropped, ["world.kind/world.host/world.ssh_options"]);
        let mut settings = WorldSettings::default();
        let (mut warnings, root) = (Vec::new(), std::path::PathBuf::from("/w"));
        let mut layer = Layer { source: "toolhost.toml", root: &root, warnings: &mut warnings };
        section.apply(&mut settings, &mut layer);
        assert_eq!(settings, WorldSettings::default());
    }

    #[test]
    fn a_later_source_overrides_key_by_key() {
        let (mut warnings, root) = (Vec::new(), std::path::PathBuf::from("/w"));
        let mut settings = WorldSettings::default();
        for text in ["kind = \"ssh\"\nhost = \"a\"\nroot = \"/srv\"\n", "host = \"b\"\n"] {
            let section: WorldSection = toml::from_str(text).expect("parses");
            let mut layer = Layer { source: "config.toml", root: &root, warnings: &mut warnings };
            section.apply(&mut settings, &mut layer);
        }
        assert_eq!(settings.kind, WorldKind::Ssh);
        assert_eq!((settings.host.as_deref(), settings.root.as_deref()), (Some("b"), Some("/srv")));
    }
}

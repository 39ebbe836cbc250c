//! Skill discovery (docs/tools.md, "skill"): folders holding `<name>/SKILL.md`, in the workspace
//! (`.toolhost/skills/`, and the layouts other agents use, `.claude/skills/` and
//! `.agents/skills/`), in folders `[skills] dirs` names, and in the user's config folder
//! (`~/.config/toolhost/skills/`, `~/.claude/skills/`, `~/.agents/skills/`). The first folder
//! defining a name wins. The catalog is read afresh on every look-up, so a skill added while
//! the session runs is found.

use std::path::{Path, PathBuf};
use toolhost_contract::{LoadedSkill, ResourceBase, SkillCatalog, SkillEntry};
use toolhost_tools_interact::skill::{parse_skill_file, valid_name};

/// The largest `SKILL.md` read (instructions, not data).
const MAX_SKILL_BYTES: u64 = 1024 * 1024;

/// Where a session's skills are found, in order of precedence.
#[derive(Clone, Debug)]
pub struct SkillDirs {
    dirs: Vec<(PathBuf, &'static str)>,
}

impl SkillDirs {
    /// The folders for the workspace at `root` (its roots in order), `extra` from the
    /// configuration, then the user's.
    pub fn new(roots: &[PathBuf], extra: &[PathBuf]) -> Self {
        let mut dirs = Vec::new();
        for root in roots {
            for layout in [".toolhost/skills", ".claude/skills", ".agents/skills"] {
                dirs.push((root.join(layout), "workspace"));
            }
        }
        for dir in extra {
            dirs.push((dir.clone(), "config"));
        }
        let config_home = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
        if let Some(config) = config_home {
            dirs.push((config.join("toolhost/skills"), "user"));
        }
        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
            dirs.push((home.join(".claude/skills"), "user"));
            dirs.push((home.join(".agents/skills"), "user"));
        }
        SkillDirs { dirs }
    }

    fn scan(&self) -> Vec<(SkillEntry, PathBuf)> {
        let mut found: Vec<(SkillEntry, PathBuf)> = Vec::new();
        for (dir, provider) in &self.dirs {
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            let mut folders: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            folders.sort();
            for folder in folders {
                let file = folder.join("SKILL.md");
                let Some(text) = read_bounded(&file) else { continue };
                let parsed = parse_skill_file(&text);
                let folder_name = folder.file_name().and_then(|n| n.to_str()).unwrap_or("");
                let name = parsed.name.clone().unwrap_or_else(|| folder_name.to_owned());
                if !valid_name(&name) {
                    tracing::warn!(path = %file.display(), name, "skill skipped: invalid name");
                    continue;
                }
                if found.iter().any(|(e, _)| e.name == name) {
                    continue;
                }
                let description = parsed.description.clone().unwrap_or_else(|| {
                    parsed
                        .body
                        .lines()
                        .map(|l| l.trim().trim_start_matches('#').trim())
                        .find(|l| !l.is_empty())
                        .unwrap_or("")
                        .to_owned()
                });
                let entry = SkillEntry {
                    name,
                    description,
                    provider: (*provider).to_owned(),
                    path: file.display().to_string(),
                    model_invocable: !parsed.disable_model_invocation,
                };
                found.push((entry, folder));
            }
        }
        found.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        found
    }
}

fn read_bounded(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SKILL_BYTES {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

impl SkillDirs {
    /// Skill `name` as the `skill` tool gives it to the model (its `<skill_content>` envelope),
    /// for front ends that offer skills as prompts (MCP `prompts/get`).
    pub fn prompt(&self, name: &str) -> Result<Option<String>, String> {
        let Some(skill) = self.load(name)? else { return Ok(None) };
        Ok(Some(toolhost_tools_interact::skill::envelope(
            &skill.entry.name,
            skill.resource_base.as_ref(),
            &skill.content,
        )))
    }
}

impl SkillCatalog for SkillDirs {
    fn skills(&self) -> Vec<SkillEntry> {
        self.scan().into_iter().map(|(entry, _)| entry).collect()
    }

    fn load(&self, name: &str) -> Result<Option<LoadedSkill>, String> {
        let Some((entry, folder)) = self.scan().into_iter().find(|(e, _)| e.name == name) else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(&entry.path)
            .map_err(|e| format!("cannot read skill \"{name}\" ({}): {e}", entry.path))?;
        let content = parse_skill_file(&text).body;
        let resource_base = Some(ResourceBase::Directory { path: folder.display().to_string() });
        Ok(Some(LoadedSkill { entry, content, resource_base }))
    }
}

/// `[skills]` as one source gives it: `dirs`, more folders to find skills in (relative to the
/// workspace).
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsSection {
    dirs: Option<Vec<PathBuf>>,
}

impl toolhost_contract::config::Section for SkillsSection {
    type Settings = Vec<PathBuf>;

    fn apply(self, dirs: &mut Vec<PathBuf>, layer: &mut toolhost_contract::config::Layer<'_>) {
        if let Some(configured) = self.dirs {
            *dirs = configured.into_iter().map(|d| layer.resolve(d)).collect();
        }
    }
}

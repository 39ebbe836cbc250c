//! Skill discovery (docs/tools.md, "skill"): folders holding `<name>/SKILL.md`, in the workspace
//! (`.toolhost/skills/`, and the layouts other agents use, `.claude/skills/` and
//! `.agents/skills/`), in folders `[skills] dirs` names, and in the user's config folder
//! (`~/.config/toolhost/skills/`, `~/.claude/skills/`, `~/.agents/skills/`). The first folder
//! defining a name wins. The catalog is read afresh on every look-up, so a skill added while
//! the session runs is found.
//!
//! A folder inside the workspace holds what the repository put there, whoever named it: its
//! skills must stay inside the workspace. A skills folder, skill folder or `SKILL.md` there
//! that resolves (through a symlink) outside the workspace is skipped with a warning, so a
//! cloned repository cannot hand the model a file of the user's as instructions.

use std::path::{Path, PathBuf};
use toolhost_contract::{LoadedSkill, ResourceBase, SkillCatalog, SkillEntry};
use toolhost_tools_interact::skill::{parse_skill_file, valid_name};

/// The largest `SKILL.md` read (instructions, not data).
const MAX_SKILL_BYTES: u64 = 1024 * 1024;

/// Where a session's skills are found, in order of precedence.
#[derive(Clone, Debug)]
pub struct SkillDirs {
    dirs: Vec<SkillDir>,
}

/// One folder of skills.
#[derive(Clone, Debug)]
struct SkillDir {
    path: PathBuf,
    provider: &'static str,
    /// The workspace root (canonical) this folder is inside: what it finds must resolve
    /// beneath it.
    confined_to: Option<PathBuf>,
}

impl SkillDirs {
    /// The folders for the workspace at `root` (its roots in order), `extra` from the
    /// configuration, then the user's.
    pub fn new(roots: &[PathBuf], extra: &[PathBuf]) -> Self {
        let roots: Vec<(PathBuf, PathBuf)> = roots
            .iter()
            .map(|root| (root.clone(), root.canonicalize().unwrap_or_else(|_| root.clone())))
            .collect();
        // The root a folder is inside, as named or as resolved.
        let inside = |dir: &Path| {
            let resolved = dir.canonicalize().ok();
            roots.iter().find_map(|(root, canonical)| {
                let within = dir.starts_with(root)
                    || dir.starts_with(canonical)
                    || resolved.as_ref().is_some_and(|r| r.starts_with(canonical));
                within.then(|| canonical.clone())
            })
        };
        let mut dirs = Vec::new();
        for (root, canonical) in &roots {
            for layout in [".toolhost/skills", ".claude/skills", ".agents/skills"] {
                let path = root.join(layout);
                dirs.push(SkillDir {
                    path,
                    provider: "workspace",
                    confined_to: Some(canonical.clone()),
                });
            }
        }
        for dir in extra {
            dirs.push(SkillDir { path: dir.clone(), provider: "config", confined_to: inside(dir) });
        }
        let config_home = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
        let mut user = Vec::new();
        if let Some(config) = config_home {
            user.push(config.join("toolhost/skills"));
        }
        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
            user.push(home.join(".claude/skills"));
            user.push(home.join(".agents/skills"));
        }
        for path in user {
            // The user's own folders, unless the workspace is where they are.
            let confined_to = inside(&path);
            dirs.push(SkillDir { path, provider: "user", confined_to });
        }
        SkillDirs { dirs }
    }

    fn scan(&self) -> Vec<(SkillEntry, PathBuf)> {
        let mut found: Vec<(SkillEntry, PathBuf)> = Vec::new();
        for SkillDir { path: dir, provider, confined_to } in &self.dirs {
            if dir.symlink_metadata().is_err() {
                continue;
            }
            if let Some(root) = confined_to
                && leaves(dir, root)
            {
                tracing::warn!(
                    path = %dir.display(),
                    "skills folder skipped: it leads outside the workspace"
                );
                continue;
            }
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            let mut folders: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            folders.sort();
            for folder in folders {
                let file = folder.join("SKILL.md");
                if let Some(root) = confined_to
                    && let Some(outside) = [&folder, &file].into_iter().find(|p| leaves(p, root))
                {
                    tracing::warn!(
                        path = %outside.display(),
                        "skill skipped: it is a symlink leading outside the workspace"
                    );
                    continue;
                }
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

/// Whether `path` exists and resolves outside `root` (canonical); a path that does not exist
/// leads nowhere.
fn leaves(path: &Path, root: &Path) -> bool {
    path.symlink_metadata().is_ok()
        && path.canonicalize().map_or(true, |resolved| !resolved.starts_with(root))
}

fn read_bounded(path: &Path) -> Option<String> {
    // Type checked on the open handle: a FIFO swapped in cannot block the listing.
    toolhost_contract::regular_file::read_regular_text(path, MAX_SKILL_BYTES).ok()
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

    /// Folders outside the workspace (absolute, or climbing out with `..`) would hand the
    /// model files of the user's as instructions: dropped. Folders inside stay, and discovery
    /// keeps what they find inside the workspace too (symlinks leaving it are skipped).
    fn restrict_untrusted(&mut self, _applied: &Vec<PathBuf>) -> Vec<String> {
        let mut dropped = toolhost_contract::config::Dropped::new();
        dropped.unless("skills.dirs", &mut self.dirs, |dirs| {
            dirs.iter().all(|dir| {
                dir.components().all(|c| {
                    matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir)
                })
            })
        });
        dropped.group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use toolhost_contract::config::Section;

    fn skill(folder: &Path, name: &str) {
        std::fs::create_dir_all(folder).unwrap();
        let text = format!("---\nname: {name}\ndescription: d\n---\nbody\n");
        std::fs::write(folder.join("SKILL.md"), text).unwrap();
    }

    fn names(dirs: &SkillDirs) -> Vec<String> {
        dirs.skills().into_iter().map(|s| s.name).filter(|n| n.starts_with("t-")).collect()
    }

    #[test]
    fn skills_symlinked_from_outside_the_workspace_are_skipped() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = ws.path();
        skill(&root.join(".toolhost/skills/good"), "t-good");
        // Inside to inside is fine.
        skill(&root.join("docs/shared"), "t-shared");
        symlink(root.join("docs/shared"), root.join(".toolhost/skills/shared")).unwrap();
        // A skill folder, a SKILL.md and a whole skills folder leading outside.
        skill(&outside.path().join("folder"), "t-folder");
        symlink(outside.path().join("folder"), root.join(".toolhost/skills/folder")).unwrap();
        skill(&outside.path().join("file"), "t-file");
        std::fs::create_dir_all(root.join(".claude/skills/file")).unwrap();
        symlink(outside.path().join("file/SKILL.md"), root.join(".claude/skills/file/SKILL.md"))
            .unwrap();
        skill(&outside.path().join("all/whole"), "t-whole");
        std::fs::create_dir_all(root.join(".agents")).unwrap();
        symlink(outside.path().join("all"), root.join(".agents/skills")).unwrap();
        let dirs = SkillDirs::new(&[root.to_path_buf()], &[]);
        assert_eq!(names(&dirs), ["t-good", "t-shared"]);
        assert!(dirs.load("t-folder").unwrap().is_none());
        assert!(dirs.load("t-good").unwrap().is_some());
    }

    #[test]
    fn a_configured_folder_inside_the_workspace_is_held_to_it() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = ws.path();
        skill(&outside.path().join("x"), "t-outside");
        symlink(outside.path(), root.join("linked")).unwrap();
        let inside = SkillDirs::new(&[root.to_path_buf()], &[root.join("linked")]);
        assert!(names(&inside).is_empty());
        // The user naming the folder outside directly is the user's choice.
        let user = SkillDirs::new(&[root.to_path_buf()], &[outside.path().to_path_buf()]);
        assert_eq!(names(&user), ["t-outside"]);
    }

    #[test]
    fn an_untrusted_source_names_skill_folders_only_inside_the_workspace() {
        for dirs in [vec!["/home/u/.ssh"], vec!["../elsewhere"], vec!["ok", "a/../../b"]] {
            let mut section =
                SkillsSection { dirs: Some(dirs.iter().map(PathBuf::from).collect()) };
            assert_eq!(section.restrict_untrusted(&Vec::new()), ["skills.dirs"], "{dirs:?}");
            assert_eq!(section.dirs, None);
        }
        let mut section = SkillsSection { dirs: Some(vec!["tools/skills".into()]) };
        assert!(section.restrict_untrusted(&Vec::new()).is_empty());
        assert_eq!(section.dirs, Some(vec![PathBuf::from("tools/skills")]));
    }
}

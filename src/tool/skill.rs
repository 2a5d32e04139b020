//! The `skill` tool: loads one skill (see [`crate::skill`]) by name and
//! returns its instructions and the list of its resource files. Skills are
//! discovered again at each call, from the call's working directory, so the
//! tool keeps no state. Asks `skill` with the skill's name as the pattern.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolError, ToolOutput, ToolScope, parse_args, schema_for};
use crate::skill::{self, SkillRoots};

/// The name the model calls it by, which is also its permission.
const NAME: &str = "skill";

pub struct SkillTool;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The skill's name, exactly as listed in <available_skills>
    name: String,
}

const DESCRIPTION: &str = include_str!("../../assets/prompts/tools/skill.txt");

fn roots(ctx: &ToolScope) -> SkillRoots {
    SkillRoots {
        cwd: ctx.cwd.clone(),
        root: ctx.root.clone(),
        home: std::env::var_os("HOME").map(std::path::PathBuf::from),
        config_dir: crate::paths::config_dir(),
    }
}

#[async_trait::async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &'static str {
        NAME
    }
    fn description(&self) -> &'static str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        schema_for::<Args>()
    }
    fn is_read_only(&self) -> bool {
        true
    }

    async fn execute(&self, input: Value, ctx: &ToolScope) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(NAME, input)?;
        let found = skill::discover(&roots(ctx));
        let Some(found_skill) = found.find(&args.name) else {
            let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
            return Err(ToolError::Failed(format!(
                "No skill named `{}`. The available skills are: {}.",
                args.name,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )));
        };
        ctx.ask(
            NAME,
            vec![found_skill.name.clone()],
            crate::permission::exact_always(&found_skill.name),
            format!("Load skill: {}", found_skill.name),
            json!({ "name": found_skill.name }),
        )
        .await?;
        let loaded = skill::load(found_skill)
            .map_err(|error| ToolError::io("read skill", &found_skill.dir, error))?;
        Ok(ToolOutput::text(
            format!("Loaded skill: {}", found_skill.name),
            render(found_skill, &loaded),
            json!({ "name": found_skill.name, "dir": found_skill.dir.display().to_string() }),
        ))
    }
}

/// What the model reads: where the skill is, its instructions, its files.
fn render(found: &skill::Skill, loaded: &skill::Loaded) -> String {
    let mut text = format!(
        "<skill name=\"{}\" dir=\"{}\">\n{}",
        found.name,
        found.dir.display(),
        loaded.body.trim_end()
    );
    text.push_str("\n</skill>");
    if !loaded.files.is_empty() {
        text.push_str("\n\nFiles in the skill's folder (relative to its dir):\n");
        text.push_str(&loaded.files.join("\n"));
        if loaded.more_files {
            text.push_str("\n(more files not listed)");
        }
    }
    text
}

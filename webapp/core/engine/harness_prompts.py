"""The summarizer's instructions for each harness, in the shape its product documents (the
sections it asks for, what must survive), written for the playground: no product's prompt text
is copied. docs/harnesses.md cites where each shape is documented.

The offline summarizer writes the same exchange lines for every style; a style only gives them
the product's frame (an opening, the section that lists the facts, a closing), so a summary
reads like the product's and is billed at about its size, and a replay stays deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SummaryStyle:
    name: str
    instructions: str  # the summarizer's prompt (billed as its input)
    opening: str  # the summary's first line
    facts_label: str = "Facts to keep:"
    closing: str = ""


TEXTBOOK = SummaryStyle(
    "textbook",
    "Summarize the earlier part of this conversation so the assistant can go on without it. "
    "Keep decisions and their reasons, facts established (names, numbers, identifiers), "
    "the user's constraints, and the state of the task. Be brief.",
    "[Summary of earlier exchanges]",
)

STYLES: dict[str, SummaryStyle] = {
    style.name: style
    for style in (
        TEXTBOOK,
        SummaryStyle(
            "codex",
            "You are handing this task over to another model that will continue it without seeing "
            "this conversation. Write a checkpoint for it: the goal; what has been done and the "
            "decisions taken; the user's constraints and preferences; what is left to do, in order; "
            "the exact data it will need (paths, commands, identifiers, numbers). Be concise and "
            "structured.",
            "[Checkpoint from the model that worked on this task before you: continue from it]",
        ),
        SummaryStyle(
            "gemini",
            "The conversation below is about to be replaced by your snapshot. First think privately, "
            "then write one <state_snapshot> with these parts: overall_goal, active_constraints, "
            "key_knowledge, artifact_trail, file_system_state, recent_actions, task_state. If the "
            "messages hold an earlier snapshot, carry every part of it that still holds into the "
            "new one. Keep exact values.",
            "<state_snapshot>",
            "key_knowledge:",
            "</state_snapshot>",
        ),
        SummaryStyle(
            "claude",
            "Summarize this session so work can resume from the summary alone. Sections: the "
            "user's requests and intent; key technical concepts; files and code touched; errors "
            "met and how they were fixed; the user's own words that still apply; pending tasks; "
            "the current work and the next step. Quote identifiers exactly.",
            "This session continues an earlier one that ran out of context. Summary of it:",
            "Key facts:",
        ),
        SummaryStyle(
            "anthropic",
            "Write a summary of the conversation so far that lets you continue the task: the goal, "
            "the progress, the facts and decisions you will need, and the next steps. Put it "
            "between <summary> tags.",
            "<summary>",
            "Facts:",
            "</summary>",
        ),
        SummaryStyle(
            "openhands",
            "You keep the state of an agent's work. From the previous summary and the events "
            "below, write the new state: USER_CONTEXT (what the user wants, their constraints), "
            "TASK_TRACKING (tasks and their status), COMPLETED, PENDING, CURRENT_STATE, and the "
            "code state (files, functions, test results). Merge the previous summary; drop "
            "nothing still true.",
            "USER_CONTEXT / COMPLETED / PENDING / CURRENT_STATE (condensed events):",
            "USER_CONTEXT facts:",
        ),
        SummaryStyle(
            "langchain",
            "Extract from the messages below the context the assistant needs to go on with the "
            "user's task once they are removed: the task, what was found and decided, and what "
            "remains. Write only that context.",
            "Here is a summary of the conversation to date:",
        ),
    )
}


# Gemini CLI's second call, which checks the snapshot it just wrote and writes it again.
GEMINI_PROBE = (
    "Read your snapshot again against the messages. Is anything important missing or wrong? "
    "Write the final <state_snapshot>, corrected, or the same one if it holds."
)
# The model's short answer Gemini CLI puts after the snapshot, so the history alternates.
GEMINI_ACK = "Understood. I will carry on from this snapshot."
# Claude Code's recent files, re-read after a compaction, under the summary.
RE_READ = "Files read again after the summary:"

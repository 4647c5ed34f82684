"""The harness: reading a project, running its agent, recording, scoring, judging and reporting."""

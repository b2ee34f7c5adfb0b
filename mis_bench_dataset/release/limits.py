"""What one array or transcript of a release may hold before it is refused unread (settable:
`build_dataset(max_seconds=...)`); light, so `mis-bench build --help` shows them without numpy."""

MAX_RECORDING_SECONDS = 2 * 60 * 60
MAX_TRANSCRIPT_CHARS = 1_000_000

"""Publishing a built folder to the Hugging Face Hub (thin: huggingface_hub does the work)."""

from __future__ import annotations

from pathlib import Path


def push_to_hub(folder: str | Path, repo_id: str, private: bool = False, token: str | None = None) -> str:
    """Upload the Parquet shards, card and build report as a dataset repo; returns the repo URL."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    api.upload_folder(
        folder_path=str(folder),
        repo_id=repo_id,
        repo_type="dataset",
        commit_message="Upload MIS-Bench build (mis-bench build)",
    )
    return str(url)

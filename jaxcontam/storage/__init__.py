"""Where jaxcontam reads and writes bytes: local paths, and URLs that an fsspec filesystem serves (`gs://`,
`s3://`, `hf://`, `file://`, ...), with `.gz` and `.zst` files decompressed as they stream.

An output folder in a bucket is written through a local mirror (`output_folder`): the mirror is first filled with
what the bucket holds, so a run resumes from the bucket's stage store on any machine, and each file written in it
is uploaded whole (`publish`), so the bucket never holds a half-written object.

A URL becomes a `upath.UPath`, which has the pathlib methods the readers use (`open`, `is_file`, `rglob`,
`stat`, `suffix`), so one code path reads local and remote files. Credentials and endpoints come from each
cloud's standard chain (application default credentials, `STORAGE_EMULATOR_HOST`; the AWS environment, profile
or role, `AWS_ENDPOINT_URL`); jaxcontam's own settings never hold a secret. Transient errors (HTTP 5xx, reset
connections) are retried with backoff by gcsfs and botocore themselves; a permanent one is reported here with
its fix.
"""

from jaxcontam.storage.locations import (
    EXTRAS,
    Readable,
    as_path,
    describe_error,
    glob_files,
    has_glob,
    is_url,
    list_files,
    read_range,
    storage_errors,
)
from jaxcontam.storage.outputs import (
    OUTPUT_MARKER,
    cache_root,
    check_output,
    claim_output,
    output_file,
    output_folder,
    publish,
    publish_tree,
)
from jaxcontam.storage.streams import (
    COMPRESSED,
    CorruptStream,
    Fetched,
    base_suffix,
    decompressed,
    fetch,
    open_binary,
    read_ahead,
)

__all__ = [
    "COMPRESSED",
    "CorruptStream",
    "EXTRAS",
    "OUTPUT_MARKER",
    "Fetched",
    "Readable",
    "as_path",
    "base_suffix",
    "cache_root",
    "check_output",
    "claim_output",
    "decompressed",
    "describe_error",
    "fetch",
    "glob_files",
    "has_glob",
    "is_url",
    "list_files",
    "open_binary",
    "output_file",
    "output_folder",
    "publish",
    "publish_tree",
    "read_ahead",
    "read_range",
    "storage_errors",
]

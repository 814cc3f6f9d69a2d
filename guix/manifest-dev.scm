;;; guix/manifest-dev.scm -- add-on for development: combine it with one variant.
;;;
;;;   guix time-machine -C guix/channels.scm -- shell \
;;;     -m guix/manifest.scm -m guix/manifest-dev.scm -- python3 -m pytest -m 'not slurm and not mpi'
;;;
;;; The test tools of pyproject.toml's `test' extra (PoCL comes from the
;;; variant), the build backend, matplotlib (`plot' extra) and the linter.
;;; See guix/manifest.scm for the list of variants.

(specifications->manifest
 '("python-pytest"
   "python-hypothesis"
   "python-jsonschema"
   "python-hatchling"
   "python-matplotlib"
   "ruff"))

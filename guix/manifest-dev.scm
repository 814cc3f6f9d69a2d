;;; guix/manifest-dev.scm -- add-on for development: combine it with one variant.
;;;
;;;   guix time-machine -C guix/channels.scm -- shell \
;;;     -m guix/manifest.scm -m guix/manifest-dev.scm -- python3 -m pytest -m 'not slurm and not mpi'
;;;
;;; The test tools of pyproject.toml's `test' extra (PoCL comes from the
;;; variant), the build backend, matplotlib (`plot' extra) and the linter.
;;; `ruff' is in Guix at the pin (guix/channels.scm) but not in every Guix
;;; (1.5.0 lacks it): without it the manifest says so and leaves it out,
;;; rather than failing (pip install ruff, or use the pin).
;;; See guix/manifest.scm for the list of variants.

(use-modules (guix profiles)
             (gnu packages))                  ;specifications->manifest

(define %optional
  ;; Names this Guix may lack.
  (filter (lambda (name)
            (or (pair? (find-packages-by-name name))
                (begin
                  (format (current-error-port)
                          "guix/manifest-dev.scm: note: no ~a package in this Guix; \
left out~%" name)
                  #f)))
          '("ruff")))

(specifications->manifest
 (append '("python-pytest"
           "python-pytest-xdist"              ;pyproject.toml's addopts run workers
           "python-hypothesis"
           "python-jsonschema"
           "python-hatchling"
           "python-matplotlib")
         %optional))

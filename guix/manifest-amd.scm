;;; guix/manifest-amd.scm -- oclsci on AMD GPUs through ROCm (PlaFRIM enbata).
;;;
;;;   PYOPENCL_CTX='0:0' guix time-machine -C guix/channels.scm -- \
;;;     shell --pure --preserve='^PYOPENCL_CTX$' -m guix/manifest-amd.scm -- oclsci jacobi
;;;
;;; rocm-opencl-runtime installs etc/OpenCL/vendors/amdocl64.icd; with no other
;;; ICD in the profile, platform 0 is ROCm.  The kernel driver (amdgpu, /dev/kfd)
;;; is the host's.  See guix/manifest.scm for the list of variants.

(use-modules (guix profiles)
             (guix packages)                  ;package-propagated-inputs
             (guix utils)                     ;current-source-directory
             (gnu packages)                   ;specification->package
             ((gnu packages python) #:select (python)))

(define %oclsci
  ;; The oclsci package built from this checkout (guix/oclsci.scm): provides
  ;; the `oclsci' command and propagates the Python libraries it needs.
  (load (string-append (current-source-directory) "/oclsci.scm")))

(packages->manifest
 (append
  ;; oclsci, the interpreter, and what oclsci needs at run time: the very
  ;; packages it propagates (python-pyopencl, the python-numpy and python-mako
  ;; that python-pyopencl propagates, python-click, python-pillow), never
  ;; "python-numpy" by name, which is the newest of several NumPys and would
  ;; collide with python-pyopencl's (guix/check.sh catches that).
  (list %oclsci python)
  (map cadr (package-propagated-inputs %oclsci))
  (map specification->package
       '(;; OpenCL implementation: ROCm, on AMD GPUs.
         "rocm-opencl-runtime"
         ;; Diagnostics (`clinfo -l') and basic commands under --pure.
         "clinfo"
         "coreutils"))))

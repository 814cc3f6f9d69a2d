;;; guix/manifest-nvidia.scm -- oclsci on NVIDIA GPUs (PlaFRIM sirocco).
;;;
;;; Guix's main channel has no NVIDIA driver: the OpenCL driver is the host's
;;; libnvidia-opencl.so.1.  This manifest therefore carries no ICD at all, so
;;; that `guix shell' leaves OCL_ICD_VENDORS alone and a directory holding an
;;; nvidia.icd (made by guix/nvidia-icd.sh) survives --pure:
;;;
;;;   eval "$(guix/nvidia-icd.sh "$HOME/.cache/oclsci/nvidia")"
;;;   guix time-machine -C guix/channels.scm -- shell --pure \
;;;     --preserve='^OCL_ICD_VENDORS$' --preserve='^LD_LIBRARY_PATH$' \
;;;     -m guix/manifest-nvidia.scm -- oclsci jacobi
;;;
;;; Do not add pocl or rocm-opencl-runtime here: the profile would then set
;;; OCL_ICD_VENDORS to its own etc/OpenCL/vendors, overriding the preserved value.
;;; See guix/manifest.scm for the list of variants.

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
       '(;; No OpenCL implementation: the host's NVIDIA driver is used.
         ;; Diagnostics (`clinfo -l') and basic commands under --pure.
         "clinfo"
         "coreutils"))))

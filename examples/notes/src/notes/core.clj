(ns notes.core
  "A small notes app: a sign-in form and a session (ring-core's cookie
  store), notes kept in nginx's shared memory so that every worker sees the
  same ones, its stylesheet served by nginx itself, and a JSON API over the
  same notes. See examples/notes/README.md for the command that serves it."
  (:require [clojure.data.json :as json]
            [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [compojure.core :refer [ANY DELETE GET POST defroutes routes]]
            [compojure.route :as route]
            [crypto.random :as random]
            [nginx.jvm.shared :as shared]
            [ring.middleware.flash :refer [wrap-flash]]
            [ring.middleware.keyword-params :refer [wrap-keyword-params]]
            [ring.middleware.params :refer [wrap-params]]
            [ring.middleware.session :refer [wrap-session]]
            [ring.middleware.session.cookie :refer [cookie-store]]
            [ring.util.response :as response])
  (:import [java.time Instant]))

;; --- the notes, in the shared dictionary "notes" ---------------------------
;;
;; Each worker has its own JVM: an atom would hold one list per worker. The
;; dictionary (jvm_shared_dict notes 1m, or --shared-dict notes:1m) is one for
;; all of them: "next-id" counts, "note:ID" holds a note as EDN, and
;; "trash:USER" is a list of the user's deleted notes, the latest first, for
;; "Undo delete".

(def store
  (shared/dict "notes"))

(def max-length
  "The longest note, in characters: a note is one dictionary value."
  2000)

(defn- note-key [id]
  (str "note:" id))

(defn- parse-id
  "The id in a URL, or nil when it is not a number."
  [s]
  (when (and s (re-matches #"[1-9][0-9]{0,17}" s))
    (Long/parseLong s)))

(defn find-note [id]
  (some-> (get store (note-key id)) edn/read-string))

(defn all-notes
  "Every note, the newest first."
  []
  (->> (shared/keys store 100000)
       (keep #(when (str/starts-with? % "note:")
                (find-note (subs % 5))))
       (sort-by :id >)))

(defn- add-note!
  "Stores a new note; returns it, or nil when the dictionary is full."
  [author text]
  (let [note {:id (shared/incr! store "next-id")
              :author author
              :text text
              :created (str (Instant/now))}]
    (when (shared/put! store (note-key (:id note)) (pr-str note))
      note)))

;; The trash: a list per user, pushed at the head when a note is deleted and
;; popped from the head to undo, at most trash-size deep (the oldest fall
;; off the tail), forgotten an hour after the last delete.

(def trash-size 10)

(defn- trash-key [user]
  (str "trash:" user))

(defn- trash!
  "Deletes a note, keeping it in its author's trash."
  [note]
  (let [k (trash-key (:author note))]
    (when (pos? (shared/lpush! store k (pr-str note)))
      (while (> (shared/llen store k) trash-size)
        (shared/rpop! store k))
      (shared/expire! store k 3600000))
    (shared/delete! store (note-key (:id note)))))

(defn- undo!
  "Puts back the user's latest deleted note; returns it, or nil when the
  trash is empty."
  [user]
  (when-let [note (some-> (shared/lpop! store (trash-key user)) edn/read-string)]
    (shared/put! store (note-key (:id note)) (pr-str note))
    note))

(defn- check-text
  "Why a note's text cannot be stored, or nil when it can."
  [text]
  (cond (not (string? text)) "a note needs a text"
        (str/blank? text) "a note needs a text"
        (> (count text) max-length) (str "a note has at most " max-length
                                         " characters")))

;; --- the session ------------------------------------------------------------
;;
;; ring-core's cookie store keeps the session in the cookie itself, encrypted
;; and signed with a 16-byte key: nothing to share between the workers but the
;; key. -Dnotes.session-key=32-HEX-DIGITS gives it; without it, the first
;; worker to load this namespace puts a random one in the dictionary and
;; every worker takes that one (it lasts as long as the dictionary).

(defn- hex->bytes [^String s]
  (byte-array (map #(unchecked-byte (Integer/parseInt (apply str %) 16))
                   (partition 2 s))))

(defn- session-key []
  (if-let [hex (System/getProperty "notes.session-key")]
    (if (re-matches #"[0-9a-fA-F]{32}" hex)
      (hex->bytes hex)
      (throw (IllegalArgumentException.
              "-Dnotes.session-key must be 32 hexadecimal digits (16 bytes)")))
    (do (shared/add! store "session-key" (random/bytes 16))
        (get store "session-key"))))

;; --- pages ------------------------------------------------------------------

(defn- escape-html [s]
  (str/escape (str s) {\< "&lt;" \> "&gt;" \& "&amp;" \" "&quot;" \' "&#39;"}))

(defn- html [status & body]
  {:status status
   :headers {"Content-Type" "text/html; charset=utf-8"}
   :body (str "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
              "<title>Notes</title>\n"
              "<link rel=\"stylesheet\" href=\"/static/style.css\">\n"
              "</head><body>\n<h1><img src=\"/static/notes.svg\" alt=\"\"> Notes</h1>\n"
              (apply str body)
              "</body></html>\n")})

(defn- note-html [user {:keys [id author text created]}]
  (str "<li id=\"note-" id "\"><p>" (escape-html text) "</p>\n"
       "<small>" (escape-html author) ", " (escape-html created) "</small>"
       (when (= user author)
         (str "\n<form method=\"post\" action=\"/notes/" id "/delete\">"
              "<button>Delete</button></form>"))
       "</li>\n"))

(defn- home [{:keys [session flash]}]
  (let [user (:user session)]
    (html 200
          (when flash
            (str "<p class=\"flash\">" (escape-html flash) "</p>\n"))
          (if user
            (str "<form method=\"post\" action=\"/logout\">Signed in as <b>"
                 (escape-html user) "</b> <button>Sign out</button></form>\n"
                 "<form method=\"post\" action=\"/notes\">\n"
                 "<textarea name=\"text\" maxlength=\"" max-length
                 "\" required></textarea>\n<button>Add note</button>\n</form>\n")
            (str "<form method=\"post\" action=\"/login\">\n"
                 "<label>Your name <input name=\"name\" maxlength=\"40\" required></label>\n"
                 "<button>Sign in</button>\n</form>\n"))
          (when (and user (pos? (shared/llen store (trash-key user))))
            (str "<form method=\"post\" action=\"/notes/undo\">"
                 "<button>Undo delete</button></form>\n"))
          "<ul class=\"notes\">\n"
          (apply str (map #(note-html user %) (all-notes)))
          "</ul>\n"
          "<p><a href=\"/api/notes\">The same notes in JSON</a></p>\n")))

(defn- back-home
  "303: the browser follows with a GET, so a reload does not post again."
  [flash]
  (assoc (response/redirect "/" :see-other) :flash flash))

(defn- login [{:keys [params session]}]
  (let [name (str/trim (str (:name params)))]
    (if (<= 1 (count name) 40)
      (-> (back-home (str "Welcome, " name "."))
          (assoc :session (assoc session :user name)))
      (back-home "A name of 1 to 40 characters, please."))))

(defn- logout [_]
  (-> (back-home "Signed out.")
      (assoc :session nil)))

(defn- forbidden [why]
  (html 403 "<p>" (escape-html why) "</p>\n<p><a href=\"/\">Back</a></p>\n"))

(defn- post-note [{:keys [params session]}]
  (let [user (:user session)
        text (:text params)
        invalid (check-text text)]
    (cond (nil? user) (forbidden "Sign in to add a note.")
          invalid (back-home (str "Not saved: " invalid "."))
          (add-note! user text) (back-home "Note saved.")
          :else (back-home "Not saved: no room left."))))

(defn- delete-note [{:keys [params session]}]
  (let [note (some-> (parse-id (:id params)) find-note)]
    (cond (nil? note) (html 404 "<p>No such note.</p>\n")
          (not= (:user session) (:author note))
          (forbidden "Only its author may delete a note.")
          :else (do (trash! note)
                    (back-home "Note deleted.")))))

(defn- undo-delete [{:keys [session]}]
  (let [user (:user session)]
    (cond (nil? user) (forbidden "Sign in to undo a delete.")
          (undo! user) (back-home "Note restored.")
          :else (back-home "Nothing to undo."))))

(defroutes site
  (GET "/" request (home request))
  (POST "/login" request (login request))
  (POST "/logout" request (logout request))
  (POST "/notes" request (post-note request))
  (POST "/notes/undo" request (undo-delete request))
  (POST "/notes/:id/delete" request (delete-note request)))

;; --- the JSON API -------------------------------------------------------------
;;
;;   GET    /api/notes        every note, newest first
;;   GET    /api/notes/ID     one note
;;   POST   /api/notes        {"text": "..."}: 201, the note, Location
;;   DELETE /api/notes/ID     204
;;
;; Writing takes a signed-in session (the cookie of the sign-in form); only
;; a note's author deletes it. Errors answer {"error": "..."}.

(defn- json-response [status body]
  {:status status
   :headers {"Content-Type" "application/json; charset=utf-8"}
   :body (json/write-str body :escape-unicode false)})

(defn- json-error [status message]
  (json-response status {:error message}))

(defn- read-json
  "The request's JSON body, or nil when it is not JSON."
  [{:keys [body]}]
  (try
    (json/read (io/reader body :encoding "UTF-8") :key-fn keyword)
    (catch Exception _ nil)))

(defn- api-post [{:keys [session headers] :as request}]
  (let [user (:user session)
        json? (str/starts-with? (get headers "content-type" "") "application/json")
        data (delay (read-json request))
        invalid (delay (check-text (:text @data)))]
    (cond (nil? user) (json-error 401 "sign in first (POST /login)")
          (not json?) (json-error 415 "send Content-Type: application/json")
          (not (map? @data)) (json-error 400 "the body is not a JSON object")
          @invalid (json-error 400 @invalid)
          :else (if-let [note (add-note! user (:text @data))]
                  (assoc-in (json-response 201 note)
                            [:headers "Location"] (str "/api/notes/" (:id note)))
                  (json-error 507 "no room left")))))

(defn- api-delete [{:keys [session]} id]
  (let [note (some-> (parse-id id) find-note)]
    (cond (nil? (:user session)) (json-error 401 "sign in first (POST /login)")
          (nil? note) (json-error 404 (str "no note " id))
          (not= (:user session) (:author note))
          (json-error 403 "only its author may delete a note")
          :else (do (trash! note)
                    {:status 204 :headers {} :body nil}))))

(defroutes api
  (GET "/api/notes" [] (json-response 200 (all-notes)))
  (GET "/api/notes/:id" [id]
    (if-let [note (some-> (parse-id id) find-note)]
      (json-response 200 note)
      (json-error 404 (str "no note " id))))
  (POST "/api/notes" request (api-post request))
  (DELETE "/api/notes/:id" [id :as request] (api-delete request id))
  (ANY "/api/*" [] (json-error 404 "no such API")))

;; --- the handler --------------------------------------------------------------

;; With the environment variable NGINX_JVM_REDIS (nginx.conf: `env
;; NGINX_JVM_REDIS;`) the sessions live in that Redis instead, so that every
;; host serving the app sees them (scripts/cluster.sh, docs/scale-out.md): a
;; Redis call blocks, so the location needs jvm_mode pool or virtual, and a
;; Redis that is away answers 503 (wrap-unavailable). The notes themselves
;; stay in the host's shared dictionary.

(def ^:private redis-uri (not-empty (System/getenv "NGINX_JVM_REDIS")))

(defn- session-store []
  (if-let [redis redis-uri]
    ((requiring-resolve 'nginx.jvm.session/redis-store)
     redis {:prefix "nginx-jvm:notes:session:"})
    (cookie-store {:key (session-key)})))

(def app
  "The handler nginx.conf names: jvm_content notes.core/app;"
  (cond-> (-> (routes api
                      site
                      (route/not-found (html 404 "<p>Not found.</p>\n")))
              wrap-keyword-params
              wrap-params
              wrap-flash
              (wrap-session {:store (session-store)
                             :cookie-name "notes-session"
                             ;; Lax: a form posted from another site carries
                             ;; no session, so it cannot add or delete notes
                             :cookie-attrs {:http-only true :same-site :lax}}))
    redis-uri ((requiring-resolve 'nginx.jvm.session/wrap-unavailable))))

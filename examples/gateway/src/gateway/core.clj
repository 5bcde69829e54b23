(ns gateway.core
  "An API gateway in front of static files and a backend: an access-phase
  token check (jvm_access) that hands the API's backend the user instead
  of the token, and a content handler that calls two backend services in
  parallel through nginx subrequests and combines their
  answers (jvm_async on: no thread waits for the backend)."
  (:require [clojure.string :as str]
            [nginx.jvm.request :as nr]))

(def ^:private tokens
  "Bearer tokens and who they are (a real app would ask a shared dict,
  a JWT library or an auth service)."
  {"let-me-in" "alice"
   "me-too" "bob"})

(defn auth
  "jvm_access: lets the request go on (nil) when it carries a known bearer
  token, and tells the backend who the user is ($gateway_user); otherwise
  answers 401. Both arities, as Ring handlers have: jvm_async on (in
  /dashboard) applies to the location's access handler too."
  ([req]
   (let [header (get-in req [:headers "authorization"] "")
         token (when (str/starts-with? header "Bearer ") (subs header 7))]
     (if-let [user (get tokens token)]
       (do (nr/set-variable! req :gateway_user user) nil)
       {:status 401
        :headers {"WWW-Authenticate" "Bearer realm=\"gateway\""
                  "Content-Type" "text/plain"}
        :body "a valid bearer token is needed\n"})))
  ([req respond raise]
   (try (respond (auth req)) (catch Exception e (raise e)))))

(defn api-auth
  "jvm_access of the proxy_pass API: the same check, then the request the
  backend gets carries the user in X-User (whatever the client sent as
  X-User is replaced) and no longer the client's token. Only where nothing
  redirects internally: nginx would run the access phase again, and find
  no token."
  [req]
  (or (auth req)
      (do (nr/set-headers! req {"X-User" (nr/variable req :gateway_user)
                                "Authorization" nil})
          nil)))

(defn stamp
  "jvm_body_filter: the static pages go out as they are (nil), chunk by
  chunk, and their last chunk gets a comment naming the user appended
  (not to a 401, which has no user). Bytes, not a String: a chunk may end
  in the middle of a UTF-8 character."
  [req ^bytes chunk last?]
  (let [user (when last? (nr/variable req :gateway_user))]
    (when (seq user)
      (let [tail (.getBytes (str "<!-- served to " user " by nginx-jvm -->\n")
                            "UTF-8")
            out (java.util.Arrays/copyOf chunk (+ (alength chunk) (alength tail)))]
        (System/arraycopy tail 0 out (alength chunk) (alength tail))
        out))))

(defn- json-str [s]
  (str "\"" (str/escape (str s) {\" "\\\"" \\ "\\\\" \newline "\\n"}) "\""))

(defn dashboard
  "Content (jvm_async on): /backend/profile and /backend/orders fetched in
  parallel through nginx, then one JSON document of both."
  [req respond raise]
  (let [user (nr/variable req :gateway_user)
        ;; a subrequest has variables of its own: the user goes as a header
        opts {:args (str "user=" user) :headers {"X-User" user}}
        profile (nr/subrequest req "/backend/profile" opts)
        orders (nr/subrequest req "/backend/orders" opts)]
    (-> (java.util.concurrent.CompletableFuture/allOf
         (into-array java.util.concurrent.CompletableFuture [profile orders]))
        (.whenComplete
         (reify java.util.function.BiConsumer
           (accept [_ _ error]
             (if error
               (raise error)
               (let [p @profile o @orders]
                 (respond
                  {:status (if (and (= 200 (:status p)) (= 200 (:status o))) 200 502)
                   :headers {"Content-Type" "application/json"}
                   :body (str "{\"user\": " (json-str user)
                              ", \"profile\": " (if (= 200 (:status p)) (:body p) "null")
                              ", \"orders\": " (if (= 200 (:status o)) (:body o) "null")
                              "}")})))))))))

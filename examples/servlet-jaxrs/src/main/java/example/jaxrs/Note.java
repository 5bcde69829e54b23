package example.jaxrs;

/** A note, as JSON: {"id": 1, "text": "..."}. */
public class Note {
    public long id;
    public String text;

    public Note() {
    }

    public Note(long id, String text) {
        this.id = id;
        this.text = text;
    }
}
